package panics

import (
	"fmt"
	"strings"
	"testing"
)

func TestAttrsNameThePlaceNotTheValue(t *testing.T) {
	var attrs []any
	func() {
		defer func() { attrs = Attrs(recover()) }()
		panic(fmt.Errorf("PANIC-VALUE-SECRET"))
	}()
	text := fmt.Sprint(attrs...)
	if strings.Contains(text, "PANIC-VALUE-SECRET") {
		t.Fatalf("the panic's value reached the log: %s", text)
	}
	if !strings.Contains(text, "*fmt.wrapError") && !strings.Contains(text, "*errors.errorString") {
		t.Fatalf("no panic type in %s", text)
	}
	if !strings.Contains(text, "TestAttrsNameThePlaceNotTheValue") {
		t.Fatalf("the stack does not name the panicking function: %s", text)
	}
}
