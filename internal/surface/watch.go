package surface

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ragcanary/ragcanary/internal/driver"
)

// opWatch names the InFlight surface's reads in driver errors.
const opWatch = "WatchStream"

// DeclaredCuts are the error types and codes a stream may end with to say
// it was cut for access: access to what the answer draws on was revoked,
// or could not be re-checked (the rest was withheld either way). Any other
// error event is a failure.
var DeclaredCuts = []string{"access_revoked", "authorization_unavailable"}

var _ driver.StreamWatcher = (*Chat)(nil)

// WatchStream implements driver.StreamWatcher: it asks question as the
// persona with stream: true, whatever the surface's stream setting, and
// hands each content delta of the first choice to onChunk as it arrives.
// The call's timeout and reply bound cover the whole stream.
func (c *Chat) WatchStream(ctx context.Context, persona driver.Token, question string, onChunk func(driver.StreamChunk)) (driver.StreamEnd, error) {
	if !validHeaderValue(persona.Reveal()) {
		return driver.StreamEnd{}, driver.NewError(driver.Permanent, opWatch, 0, reasonCredential, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	end, err := c.watch(ctx, persona, question, onChunk)
	return end, redact(err, persona)
}

func (c *Chat) watch(ctx context.Context, persona driver.Token, question string, onChunk func(driver.StreamChunk)) (driver.StreamEnd, error) {
	stream := c.svc.NewStreaming(ctx, c.params(nil, question), option.WithAPIKey(persona.Reveal()))
	defer func() { _ = stream.Close() }()
	finished := false
	for stream.Next() {
		chunk := stream.Current()
		at := time.Now()
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != "" {
				onChunk(driver.StreamChunk{At: at, Content: ch.Delta.Content})
			}
			finished = finished || ch.FinishReason != ""
		}
	}
	err := stream.Err()
	if declared, ok := declaredCut(err); ok {
		return driver.StreamEnd{Declared: declared}, nil
	}
	if err != nil {
		return driver.StreamEnd{}, classifySDK(opWatch, err)
	}
	if !finished {
		return driver.StreamEnd{}, driver.NewError(driver.Transient, opWatch, 0, reasonUnfinished, nil)
	}
	return driver.StreamEnd{Finished: true}, nil
}

// declaredCut reads an error event that declares an access cut: its
// error's type or code is one of DeclaredCuts. Only that word is kept,
// never the event's message (target text).
func declaredCut(err error) (string, bool) {
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		return "", false
	}
	var ev struct {
		Error struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(se.Event.Data, &ev) != nil {
		return "", false
	}
	for _, word := range []any{ev.Error.Type, ev.Error.Code} {
		if s, ok := word.(string); ok && slices.Contains(DeclaredCuts, s) {
			return s, true
		}
	}
	return "", false
}
