package target

import (
	"slices"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
)

func TestMeasurableSurfaces(t *testing.T) {
	s := func(xs ...v1alpha1.Surface) []v1alpha1.Surface { return xs }
	chat := &v1alpha1.CorpusSurfaces{Chat: &v1alpha1.ChatSurface{Type: v1alpha1.ChatOpenAI}}
	stream := &v1alpha1.CorpusSurfaces{Chat: &v1alpha1.ChatSurface{Type: v1alpha1.ChatOpenAI, Stream: true}}
	for _, c := range []struct {
		name     string
		declared *v1alpha1.CorpusSurfaces
		caps     *v1alpha1.CorpusCapabilities
		want     []v1alpha1.Surface
	}{
		{"unknown capabilities", nil, nil, s(v1alpha1.SurfaceSearch)},
		{"search only", nil, &v1alpha1.CorpusCapabilities{}, s(v1alpha1.SurfaceSearch)},
		{"contract v1.1", nil, &v1alpha1.CorpusCapabilities{AnswerSurface: true, ConversationSurface: true},
			s(v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation)},
		{"chat", chat, &v1alpha1.CorpusCapabilities{}, s(v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation)},
		{"chat streaming", stream, nil, s(v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer, v1alpha1.SurfaceConversation, v1alpha1.SurfaceStream, v1alpha1.SurfaceInFlight)},
	} {
		if got := MeasurableSurfaces(c.declared, c.caps); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSurfaceProblemNamesWhatIsMissing(t *testing.T) {
	caps := &v1alpha1.CorpusCapabilities{AnswerSurface: true}
	if msg := SurfaceProblem("kb", []v1alpha1.Surface{v1alpha1.SurfaceSearch, v1alpha1.SurfaceAnswer}, nil, caps); msg != "" {
		t.Errorf("measurable surfaces refused: %s", msg)
	}
	msg := SurfaceProblem("kb", []v1alpha1.Surface{v1alpha1.SurfaceStream, v1alpha1.SurfaceConversation}, nil, caps)
	for _, want := range []string{`Corpus "kb" cannot measure Stream (needs spec.surfaces.chat with stream: true)`, "Conversation (needs driver contract v1.1 conversations or spec.surfaces.chat)", "it can measure Search, Answer"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}
