package target

import (
	"encoding/json"
	"sync"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/surface"
)

// chatsPerCorpus bounds the chat clients kept for one corpus: its current
// configuration and those runs begun under earlier ones still probe.
const chatsPerCorpus = 4

// chatClients keep each corpus's chat clients across resolutions. A chat
// surface holds its conversations itself (the API is stateless: each
// follow-up resends the history), so the client a run started its
// conversation with must be the one its later probes follow up with. A
// manager restart loses them: a follow-up then errors, never reads as an
// absence.
type chatClients struct {
	mu       sync.Mutex
	byCorpus map[string][]keptChat
}

type keptChat struct {
	config string
	chat   *surface.Chat
}

// get returns the corpus's chat client for cfg, building it on first use.
func (c *chatClients) get(corpus string, s *v1alpha1.ChatSurface, cfg surface.ChatConfig) (*surface.Chat, error) {
	spec, err := json.Marshal(struct {
		Spec   *v1alpha1.ChatSurface
		Stream bool
		URL    string
		T      int64
	}{s, cfg.Stream, cfg.URL, int64(cfg.Timeout)})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.byCorpus[corpus] {
		if k.config == string(spec) {
			return k.chat, nil
		}
	}
	cfg.Tenant = corpus
	chat, err := surface.NewChat(cfg)
	if err != nil {
		return nil, err
	}
	if c.byCorpus == nil {
		c.byCorpus = map[string][]keptChat{}
	}
	kept := append(c.byCorpus[corpus], keptChat{config: string(spec), chat: chat})
	if len(kept) > chatsPerCorpus {
		kept = kept[len(kept)-chatsPerCorpus:]
	}
	c.byCorpus[corpus] = kept
	return chat, nil
}

// forget drops a deleted corpus's clients and their conversations.
func (c *chatClients) forget(corpus string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byCorpus, corpus)
}
