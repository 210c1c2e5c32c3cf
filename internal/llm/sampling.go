package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// createParams is the part of CreateMessageRequest params the bridge reads.
type createParams struct {
	Messages         []samplingMessage `json:"messages"`
	ModelPreferences *struct {
		Hints []struct {
			Name string `json:"name"`
		} `json:"hints"`
	} `json:"modelPreferences"`
	SystemPrompt  string          `json:"systemPrompt"`
	Temperature   *float64        `json:"temperature"`
	MaxTokens     json.RawMessage `json:"maxTokens"`
	StopSequences []string        `json:"stopSequences"`
	Tools         json.RawMessage `json:"tools"`
}

// samplingMessage is one MCP SamplingMessage.
type samplingMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentBlock is one MCP content block of a sampling message.
type contentBlock struct {
	Type     string  `json:"type"`
	Text     *string `json:"text"`
	Data     string  `json:"data"`
	MimeType string  `json:"mimeType"`
}

// chatRequest is the body POSTed to {api_base}/chat/completions.
type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	MaxTokens   int64         `json:"max_tokens"`
	Temperature *float64      `json:"temperature,omitempty"`
	Stop        []string      `json:"stop,omitempty"`
}

// chatMessage is one chat completions message; Content is a string or []contentPart.
type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// contentPart is one element of the chat completions content-part array.
type contentPart struct {
	Type     string    `json:"type"`
	Text     *string   `json:"text,omitempty"`
	ImageURL *imageURL `json:"image_url,omitempty"`
}

// imageURL is a content part's image reference (a data: URL here).
type imageURL struct {
	URL string `json:"url"`
}

// chatResponse is the part of a chat completions answer the bridge reads.
type chatResponse struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// createResult is the MCP CreateMessageResult the bridge returns.
type createResult struct {
	Role       string      `json:"role"`
	Content    textContent `json:"content"`
	Model      string      `json:"model"`
	StopReason string      `json:"stopReason,omitempty"`
}

// textContent is an MCP TextContent block.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// CreateMessage fulfils one sampling/createMessage: validates params, resolves the model, makes exactly one provider call and returns the CreateMessageResult JSON.
func (s *Sampler) CreateMessage(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	p, maxTokens, err := decodeParams(params)
	if err != nil {
		return nil, err
	}
	msgs, err := convertMessages(p)
	if err != nil {
		return nil, err
	}
	var hints []string
	if p.ModelPreferences != nil {
		for _, h := range p.ModelPreferences.Hints {
			hints = append(hints, h.Name)
		}
	}
	m, err := s.resolve(hints)
	if err != nil {
		return nil, err
	}
	if m.unusable != "" {
		return nil, providerErr(fmt.Sprintf("sampling model %q cannot be called: %s", m.Name, m.unusable), nil)
	}
	body, err := json.Marshal(chatRequest{
		Model:       m.ProviderModel(),
		Messages:    msgs,
		MaxTokens:   maxTokens,
		Temperature: p.Temperature,
		Stop:        p.StopSequences,
	})
	if err != nil {
		return nil, fmt.Errorf("llm: encoding chat request: %w", err) // unreachable: every field is plain data
	}
	resp, err := s.call(ctx, m, body)
	if err != nil {
		return nil, err
	}
	res, err := toResult(resp, m.Name)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("llm: encoding result: %w", err) // unreachable
	}
	return out, nil
}

// decodeParams parses and validates params, returning maxTokens separately.
func decodeParams(params json.RawMessage) (*createParams, int64, error) {
	if t := bytes.TrimSpace(params); len(t) == 0 || t[0] != '{' {
		return nil, 0, invalid("params must be a JSON object")
	}
	var p createParams
	if err := json.Unmarshal(params, &p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, 0, invalid(te.Field + " has the wrong type")
		}
		return nil, 0, invalid("params are not valid JSON")
	}
	if len(p.Messages) == 0 {
		return nil, 0, invalid("messages must not be empty")
	}
	maxTokens, err := parseMaxTokens(p.MaxTokens)
	if err != nil {
		return nil, 0, err
	}
	if t := bytes.TrimSpace(p.Tools); len(t) > 0 && !bytes.Equal(t, []byte("null")) && !bytes.Equal(t, []byte("[]")) {
		return nil, 0, unsupported("sampling with tools is not supported")
	}
	return &p, maxTokens, nil
}

// parseMaxTokens requires a positive integral JSON number.
func parseMaxTokens(raw json.RawMessage) (int64, error) {
	t := string(bytes.TrimSpace(raw))
	if t == "" || t == "null" {
		return 0, invalid("maxTokens is required")
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(t, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, invalid("maxTokens must be a positive integer")
		}
		n = int64(f)
	}
	if n <= 0 {
		return 0, invalid("maxTokens must be a positive integer")
	}
	return n, nil
}

// convertMessages maps systemPrompt and the MCP messages to chat completions messages.
func convertMessages(p *createParams) ([]chatMessage, error) {
	out := make([]chatMessage, 0, len(p.Messages)+1)
	if p.SystemPrompt != "" {
		out = append(out, chatMessage{Role: "system", Content: p.SystemPrompt})
	}
	for i, m := range p.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, invalid(fmt.Sprintf("messages[%d].role must be \"user\" or \"assistant\"", i))
		}
		content, err := convertContent(i, m)
		if err != nil {
			return nil, err
		}
		out = append(out, chatMessage{Role: m.Role, Content: content})
	}
	return out, nil
}

// convertContent maps one message's content: all text → a string (blocks joined by "\n");
// any image → the content-part array.
func convertContent(i int, m samplingMessage) (any, error) {
	raw := bytes.TrimSpace(m.Content)
	var blocks []contentBlock
	switch {
	case len(raw) > 0 && raw[0] == '{':
		var b contentBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return nil, invalid(fmt.Sprintf("messages[%d].content is not a valid content block", i))
		}
		blocks = []contentBlock{b}
	case len(raw) > 0 && raw[0] == '[':
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return nil, invalid(fmt.Sprintf("messages[%d].content is not a valid content block array", i))
		}
		if len(blocks) == 0 {
			return nil, invalid(fmt.Sprintf("messages[%d].content is empty", i))
		}
	default:
		return nil, invalid(fmt.Sprintf("messages[%d].content is required and must be a content block or an array of them", i))
	}
	parts := make([]contentPart, 0, len(blocks))
	texts := make([]string, 0, len(blocks))
	hasImage := false
	for j, b := range blocks {
		where := fmt.Sprintf("messages[%d].content", i)
		if raw[0] == '[' {
			where = fmt.Sprintf("messages[%d].content[%d]", i, j)
		}
		switch b.Type {
		case "text":
			if b.Text == nil {
				return nil, invalid(where + " has no text")
			}
			texts = append(texts, *b.Text)
			parts = append(parts, contentPart{Type: "text", Text: b.Text})
		case "image":
			if b.Data == "" || b.MimeType == "" {
				return nil, invalid(where + " needs data and mimeType")
			}
			if m.Role != "user" {
				return nil, unsupported("image content is only supported in user messages for sampling")
			}
			hasImage = true
			parts = append(parts, contentPart{Type: "image_url", ImageURL: &imageURL{URL: "data:" + b.MimeType + ";base64," + b.Data}})
		case "audio":
			return nil, unsupported("audio content is not supported for sampling")
		case "":
			return nil, invalid(where + " has no type")
		default:
			return nil, unsupported(fmt.Sprintf("%s content is not supported for sampling", strconv.Quote(b.Type)))
		}
	}
	if hasImage {
		return parts, nil
	}
	return strings.Join(texts, "\n"), nil
}

// toResult maps a chat completions answer to a CreateMessageResult.
func toResult(resp *chatResponse, ourName string) (*createResult, error) {
	if len(resp.Choices) == 0 {
		return nil, providerErr("sampling provider returned no choices", nil)
	}
	c := resp.Choices[0]
	text, ok := messageText(c.Message.Content)
	if !ok {
		return nil, providerErr("sampling provider returned no text content", nil)
	}
	res := &createResult{
		Role:    "assistant",
		Content: textContent{Type: "text", Text: text},
		Model:   resp.Model,
	}
	if res.Model == "" {
		res.Model = ourName
	}
	if c.FinishReason != nil {
		switch *c.FinishReason {
		case "stop":
			res.StopReason = "endTurn"
		case "length":
			res.StopReason = "maxTokens"
		default:
			res.StopReason = *c.FinishReason
		}
	}
	return res, nil
}

// messageText reads a chat completions message content: a string, or an array of text parts (concatenated).
func messageText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", false
		}
		return s, true
	}
	var parts []struct {
		Type string  `json:"type"`
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil || len(parts) == 0 {
		return "", false
	}
	var b strings.Builder
	found := false
	for _, p := range parts {
		if p.Type == "text" && p.Text != nil {
			b.WriteString(*p.Text)
			found = true
		}
	}
	return b.String(), found
}
