package spend

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpgw/mcpgw/internal/observe"
	"github.com/mcpgw/mcpgw/internal/store"
)

// recorder is a Record that keeps the batches it is given; gate, when set, holds each
// write until it is closed or receives.
type recorder struct {
	mu      sync.Mutex
	batches [][]store.SpendRow
	gate    chan struct{}
	fail    int // fail this many writes first
	panics  bool
}

func (r *recorder) record(_ context.Context, rows []store.SpendRow) error {
	if r.gate != nil {
		<-r.gate
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.panics {
		r.panics = false
		panic("boom")
	}
	if r.fail > 0 {
		r.fail--
		return errors.New("db down")
	}
	r.batches = append(r.batches, append([]store.SpendRow(nil), rows...))
	return nil
}

func (r *recorder) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, b := range r.batches {
		out = append(out, len(b))
	}
	return out
}

// waiting is how many rows wait for the writer.
func (w *Writer) waiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.pending)
}

func row(i int) store.SpendRow {
	return store.SpendRow{RequestID: strconv.Itoa(i), CallType: store.CallTypeTool, EndTime: time.Now()}
}

func TestWriterBatchesBySizeAndInterval(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(WriterConfig{Record: rec.record, BatchSize: 3, FlushInterval: 30 * time.Millisecond, FreeFlushInterval: 30 * time.Millisecond})
	for i := range 7 {
		if !w.Add(row(i)) {
			t.Fatal("a row was refused with room in the queue")
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for w.Stats().Written < 7 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := rec.sizes(); len(got) != 3 || got[0] != 3 || got[1] != 3 || got[2] != 1 {
		t.Fatalf("batches %v, want [3 3 1] (two full, the rest after the interval)", got)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Queued != 7 || st.Written != 7 || st.Dropped != 0 || st.Failed != 0 || st.MaxLag <= 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestWriterFlushesCostlyRowsSooner: a batch of rows that cost nothing waits
// FreeFlushInterval; a row that costs something is written FlushInterval after it
// arrives, with the free rows queued before it.
func TestWriterFlushesCostlyRowsSooner(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(WriterConfig{Record: rec.record, FlushInterval: 20 * time.Millisecond, FreeFlushInterval: time.Hour})
	defer func() { _ = w.Close(context.Background()) }()
	w.Add(row(0))
	time.Sleep(100 * time.Millisecond)
	if got := rec.sizes(); len(got) != 0 {
		t.Fatalf("a free row was written after 100 ms: %v, want it held for FreeFlushInterval", got)
	}
	costly := row(1)
	costly.Spend = 0.5
	w.Add(costly)
	deadline := time.Now().Add(5 * time.Second)
	for w.Stats().Written < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := rec.sizes(); len(got) != 1 || got[0] != 2 {
		t.Fatalf("batches %v, want the free and the costly row written together, soon", got)
	}
}

// TestWriterFoldsWhenFullAndFlushesAtClose: a row that finds the queue full never waits: it
// is folded into the aggregate of its day, key, team and server (written with the next
// batch, its spend still owed to budgets meanwhile), or dropped once MergeSize aggregates
// wait; Close writes everything queued and folded; a closed writer takes nothing.
func TestWriterFoldsWhenFullAndFlushesAtClose(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	w := NewWriter(WriterConfig{Record: rec.record, QueueSize: 4, MergeSize: 1, BatchSize: 1, FlushInterval: time.Millisecond})
	w.Add(row(0)) // taken by the writer, whose write waits on the gate
	deadline := time.Now().Add(5 * time.Second)
	for w.waiting() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	accepted := 0
	start := time.Now()
	for i := 1; i <= 10; i++ {
		r := row(i)
		r.APIKey, r.TeamID, r.Spend, r.Status = "k", "t", 0.25, store.SpendSuccess
		if i%3 == 0 {
			r.Status = store.SpendFailure
		}
		if w.Add(r) {
			accepted++
		}
	}
	other := row(11)
	other.APIKey = "other" // a second aggregate: no room for it
	w.Add(other)
	if time.Since(start) > time.Second {
		t.Fatal("Add blocked on a full queue")
	}
	if st := w.Stats(); accepted != 4 || st.Merged != 6 || st.Dropped != 1 {
		t.Fatalf("accepted %d, stats %+v; want 4 queued, 6 folded, 1 dropped", accepted, st)
	}
	if k, tm := w.Owed("k", "t"); k != 2.5 || tm != 2.5 {
		t.Fatalf("owed %v %v before the write, want 2.5 (every accepted or folded row's spend)", k, tm)
	}
	close(rec.gate)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Written != 5 || st.Merged != 6 || st.Dropped != 1 {
		t.Fatalf("after close: %+v, want every queued row written", st)
	}
	if k, tm := w.Owed("k", "t"); k != 0 || tm != 0 {
		t.Fatalf("owed %v %v after the write, want 0", k, tm)
	}
	var aggs []store.SpendRow
	rec.mu.Lock()
	for _, b := range rec.batches {
		for _, r := range b {
			if r.Calls != 0 {
				aggs = append(aggs, r)
			}
		}
	}
	rec.mu.Unlock()
	if len(aggs) != 1 {
		t.Fatalf("aggregates written: %+v, want one", aggs)
	}
	if agg := aggs[0]; agg.Calls != 6 || agg.Failed != 2 || agg.Spend != 1.5 || agg.APIKey != "k" || agg.TeamID != "t" {
		t.Fatalf("the aggregate written: %+v, want 6 calls, 2 failed, spend 1.5", agg)
	}
	if w.Add(row(99)) || w.Stats().Dropped != 2 {
		t.Fatal("a closed writer took a row")
	}
}

func TestWriterCloseIsBounded(t *testing.T) {
	rec := &recorder{gate: make(chan struct{})}
	w := NewWriter(WriterConfig{Record: rec.record, BatchSize: 1})
	w.Add(row(0))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close of a stuck writer: %v", err)
	}
	close(rec.gate) // let it end, for goleak
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWriterRetriesAndSurvivesPanics(t *testing.T) {
	rec := &recorder{fail: 2, panics: true}
	w := NewWriter(WriterConfig{Record: rec.record, BatchSize: 1, FlushInterval: time.Millisecond})
	w.Add(row(0)) // panics: counted as failed
	deadline := time.Now().Add(5 * time.Second)
	for w.Stats().Failed == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	w.Add(row(1)) // fails twice, then written
	for w.Stats().Written == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Failed != 1 || st.Written != 1 {
		t.Fatalf("stats %+v, want the panicking batch failed and the retried one written", st)
	}
}

func TestSinkRowsAndCost(t *testing.T) {
	rec := &recorder{}
	w := NewWriter(WriterConfig{Record: rec.record, FlushInterval: time.Millisecond})
	s := NewSink(w)
	s.SetCosts(Costs{"fx": {Default: 0.25, PerTool: map[string]float64{"echo": 2}}})
	caller := observe.Caller{KeyHash: "h", KeyAlias: "a", Team: "t", User: "u", EndUser: "e", Org: "o"}
	reqs := []*observe.Request{
		{Method: "tools/call", Target: "fx-echo", Server: "fx", Caller: caller, Status: 200},
		{Method: "tools/call", Target: "fx-add", Server: "fx", Caller: caller, Status: 200},
		{Method: "tools/call", Target: "fx-add", Server: "fx", Caller: caller, Status: 200, InBandError: true},
		{Method: "tools/call", Target: "fx-add", Server: "fx", Caller: caller, Status: 200, ErrorCode: -32603},
		{Method: "tools/list", Caller: caller, Status: 200},
		{Method: "prompts/list", Caller: caller, Status: 200},
	}
	for _, r := range reqs {
		r.Start, r.Duration = time.Now(), time.Millisecond
		s.EndRequest(context.Background(), r)
	}
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows []store.SpendRow
	for _, b := range rec.batches {
		rows = append(rows, b...)
	}
	if len(rows) != 5 {
		t.Fatalf("%d rows, want one per tools/call and tools/list", len(rows))
	}
	wantCost := []float64{2, 0.25, 0.25, 0, 0}
	for i, r := range rows {
		if r.Spend != wantCost[i] || reqs[i].Cost != wantCost[i] {
			t.Errorf("row %d spend %v (record %v), want %v", i, r.Spend, reqs[i].Cost, wantCost[i])
		}
		if r.APIKey != "h" || r.KeyAlias != "a" || r.TeamID != "t" || r.UserID != "u" || r.EndUser != "e" || r.OrganizationID != "o" || len(r.RequestID) != 36 {
			t.Errorf("row %d caller ids %+v", i, r)
		}
	}
	if rows[2].Status != store.SpendFailure || rows[2].Fault != "tool_error" || rows[3].Fault != "-32603" || rows[4].CallType != store.CallTypeList || rows[0].Status != store.SpendSuccess {
		t.Fatalf("statuses %+v", rows)
	}
}

// BenchmarkWriterPaced: the process CPU (user + system) per row when rows come as calls
// bring them, ten callers each adding one every 500 µs, through a writer whose store writes
// at once: what queueing costs, the writer's wake-ups included.
func BenchmarkWriterPaced(b *testing.B) {
	w := NewWriter(WriterConfig{Record: func(context.Context, []store.SpendRow) error { return nil }})
	r := row(0)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	var wg sync.WaitGroup
	per := (b.N + 9) / 10
	for range 10 {
		wg.Go(func() {
			for range per {
				w.Add(r)
				time.Sleep(500 * time.Microsecond)
			}
		})
	}
	wg.Wait()
	if err := w.Close(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e3/float64(per*10), "cpu-µs/row")
	if st := w.Stats(); st.Dropped != 0 || st.Written != int64(per*10) {
		b.Fatalf("stats %+v", st)
	}
}

// A write that fails for good, or panics, forgets what its rows owed (that spend escaped
// the budgets, as the shutdown warning says) and counts every call it held as failed, an
// aggregate's calls included.
func TestWriterFailedWriteForgetsOwed(t *testing.T) {
	for _, panics := range []bool{false, true} {
		gate := make(chan struct{})
		fail := func(context.Context, []store.SpendRow) error {
			<-gate
			if panics {
				panic("the store broke")
			}
			return errors.New("the store is down")
		}
		w := NewWriter(WriterConfig{Record: fail, QueueSize: 1, MergeSize: 1, BatchSize: 1, FlushInterval: time.Millisecond})
		add := func(i int) {
			r := row(i)
			r.APIKey, r.TeamID, r.Spend = "k", "t", 0.5
			w.Add(r)
		}
		add(0) // taken by the writer, whose write waits on the gate
		deadline := time.Now().Add(5 * time.Second)
		for w.waiting() != 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		for i := 1; i <= 3; i++ {
			add(i) // one queued, two folded into an aggregate
		}
		if k, tm := w.Owed("k", "t"); k != 2 || tm != 2 {
			t.Fatalf("panics=%v: owed %v %v before the write, want 2", panics, k, tm)
		}
		close(gate)
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if k, tm := w.Owed("k", "t"); k != 0 || tm != 0 {
			t.Errorf("panics=%v: owed %v %v after the failed writes, want 0", panics, k, tm)
		}
		if st := w.Stats(); st.Failed != 4 || st.Merged != 2 || st.Written != 0 {
			t.Errorf("panics=%v: stats %+v, want 4 failed calls (2 rows, an aggregate of 2)", panics, st)
		}
	}
}
