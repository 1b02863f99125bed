package probe

import (
	"context"
	"errors"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	"github.com/ragcanary/ragcanary/internal/measure"
)

// A search surface of the assistant's own names hits by its IDs: the
// payload in a hit's text is the sighting, the handle (the query) is not.
func TestSearchShowsThePayloadInAHitsText(t *testing.T) {
	tgt := Target{DocumentID: "canary-1", Handle: "zebrafinch", Payload: "quokkalantern"}
	for _, c := range []struct {
		hits []driver.Hit
		want bool
	}{
		{[]driver.Hit{{ChunkID: "es-9f3", DocumentID: "es-9f3", Text: "Notes: QuokkaLantern, filed."}}, true},
		{[]driver.Hit{{ChunkID: "es-9f3", DocumentID: "es-9f3", Text: "about zebrafinch only"}}, false},
		{[]driver.Hit{{ChunkID: "es-9f3", DocumentID: "es-9f3"}}, false},
		{[]driver.Hit{{ChunkID: "canary-1#0", DocumentID: "canary-1"}}, true},
	} {
		if got := SearchShows(c.hits, tgt); got != c.want {
			t.Errorf("SearchShows(%+v) = %v, want %v", c.hits, got, c.want)
		}
	}
}

// streamer is a driver whose stream surface answers what it is given.
type streamer struct {
	driver.Driver
	answer driver.Answer
	err    error
}

func (s streamer) AnswerStream(context.Context, driver.Token, string) (driver.Answer, error) {
	return s.answer, s.err
}

func TestStreamSurface(t *testing.T) {
	tgt := Target{DocumentID: "canary-1", Handle: "zebrafinch", Payload: "quokkalantern"}
	for _, c := range []struct {
		name string
		d    driver.Driver
		want measure.Outcome
	}{
		{"payload streamed", streamer{answer: driver.Answer{Text: "it says quokkalantern"}}, measure.Present},
		{"handle echoed", streamer{answer: driver.Answer{Text: "nothing on zebrafinch"}}, measure.Absent},
		{"stream broke off", streamer{err: errors.New("unexpected EOF")}, measure.Error},
		{"no stream surface", struct{ driver.Driver }{}, measure.Error},
	} {
		if got := Probe(context.Background(), c.d, v1alpha1.SurfaceStream, "persona", tgt); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
