package target

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
	httpdriver "github.com/ragcanary/ragcanary/internal/driver/http"
	"github.com/ragcanary/ragcanary/internal/surface"
)

// surfaced probes the surfaces a corpus declares (spec.surfaces) through
// the assistant's own APIs, and everything else — planting, sharing,
// revoking, the surfaces not declared — through the driver it wraps.
type surfaced struct {
	driver.Driver
	search driver.Searcher // nil: the driver's search
	chat   *surface.Chat   // nil: the driver's answers and conversations
	stream *surface.Chat   // nil: no Stream surface
}

func (s *surfaced) Search(ctx context.Context, persona driver.Token, query string, k int) ([]driver.Hit, error) {
	if s.search != nil {
		return s.search.Search(ctx, persona, query, k)
	}
	return s.Driver.Search(ctx, persona, query, k)
}

func (s *surfaced) Answer(ctx context.Context, persona driver.Token, question string) (driver.Answer, error) {
	if s.chat != nil {
		return s.chat.Answer(ctx, persona, question)
	}
	return s.Driver.Answer(ctx, persona, question)
}

func (s *surfaced) StartConversation(ctx context.Context, persona driver.Token, question string) (string, driver.Answer, error) {
	if s.chat != nil {
		return s.chat.StartConversation(ctx, persona, question)
	}
	c, ok := s.Driver.(driver.Conversations)
	if !ok {
		return "", driver.Answer{}, errNoConversations
	}
	return c.StartConversation(ctx, persona, question)
}

func (s *surfaced) FollowUp(ctx context.Context, persona driver.Token, id, question string) (driver.Answer, error) {
	if s.chat != nil {
		return s.chat.FollowUp(ctx, persona, id, question)
	}
	c, ok := s.Driver.(driver.Conversations)
	if !ok {
		return driver.Answer{}, errNoConversations
	}
	return c.FollowUp(ctx, persona, id, question)
}

// EndConversation frees a chat surface's conversation; the driver's own
// conversations live at the target and are left to it.
func (s *surfaced) EndConversation(persona driver.Token, id string) {
	if s.chat != nil {
		s.chat.EndConversation(persona, id)
	}
}

// MaxTurns is how many turns a chat surface's conversation holds; 0 when
// the target holds its conversations itself.
func (s *surfaced) MaxTurns() int {
	if s.chat != nil {
		return s.chat.MaxTurns()
	}
	return 0
}

// errNoStream: the corpus declares no streaming chat surface (runs refuse
// the Stream surface before probing).
var errNoStream = driver.NewError(driver.Permanent, "Stream", 0, "the corpus has no streaming chat surface", nil)

// AnswerStream reads the answer from the streaming chat surface.
func (s *surfaced) AnswerStream(ctx context.Context, persona driver.Token, question string) (driver.Answer, error) {
	if s.stream == nil {
		return driver.Answer{}, errNoStream
	}
	return s.stream.Answer(ctx, persona, question)
}

// WatchStream reads a streamed answer chunk by chunk from the streaming
// chat surface (the InFlight surface).
func (s *surfaced) WatchStream(ctx context.Context, persona driver.Token, question string, onChunk func(driver.StreamChunk)) (driver.StreamEnd, error) {
	if s.stream == nil {
		return driver.StreamEnd{}, errNoStream
	}
	return s.stream.WatchStream(ctx, persona, question, onChunk)
}

// GrantGroup and RevokeGroup pass group grants to the wrapped driver, or as
// a plain grant to the group's name where it has no group grants (what
// revocation does for a driver without them).
func (s *surfaced) GrantGroup(ctx context.Context, doc, group string) error {
	if g, ok := s.Driver.(driver.GroupGranter); ok {
		return g.GrantGroup(ctx, doc, group)
	}
	return s.Driver.Grant(ctx, doc, group)
}

func (s *surfaced) RevokeGroup(ctx context.Context, doc, group string) error {
	if g, ok := s.Driver.(driver.GroupGranter); ok {
		return g.RevokeGroup(ctx, doc, group)
	}
	return s.Driver.Revoke(ctx, doc, group)
}

// attachSurfaces wraps the corpus's driver with the surfaces it declares.
func (d *Door) attachSurfaces(c *Corpus, declared *v1alpha1.CorpusSurfaces, replies httpdriver.ReplyBudget) error {
	drv, err := d.WithSurfaces(c.Driver, c.Key, declared, c.Timeout, replies)
	if err != nil {
		return err
	}
	c.Driver = drv
	return nil
}

// WithSurfaces wraps drv so the declared surfaces are probed through the
// assistant's own APIs (key names the corpus whose chat conversations the
// door keeps; replies may be nil; known are credentials no request may
// carry outside its header, see GuardCredential). Every surface URL passes the allowlist,
// every connection the address policy (the door's client), no redirect is
// followed, and replies are bounded in size and time.
func (d *Door) WithSurfaces(drv driver.Driver, key string, declared *v1alpha1.CorpusSurfaces, timeout time.Duration, replies httpdriver.ReplyBudget, known ...driver.Token) (driver.Driver, error) {
	w := &surfaced{Driver: drv}
	client := NoRedirects(d.httpClient())
	if s := declared.Search; s != nil {
		u, err := d.Allow.Check("spec.surfaces.search.url", s.URL)
		if err != nil {
			return nil, err
		}
		search, err := surface.NewSearch(surface.SearchConfig{
			URL: u.String(), Method: s.Method, Headers: s.Headers, Body: s.Body, Query: s.QueryTemplates(),
			Hits: s.Hits, ID: s.ID, Text: s.Text,
			CredentialHeader: s.CredentialHeader.Name, CredentialPrefix: s.CredentialHeader.Prefix,
			Timeout: timeout, ReplyBudget: replies, HTTPClient: client, Credentials: known,
		})
		if err != nil {
			return nil, Stall(v1alpha1.ReasonInvalidSurface, "spec.surfaces.search: %v", err)
		}
		w.search = search
	}
	if s := declared.Chat; s != nil {
		cfg, err := d.chatConfig(s, timeout, replies, client)
		if err != nil {
			return nil, err
		}
		chats := &d.conns().chats
		if w.chat, err = chats.get(key, s, cfg); err != nil {
			return nil, Stall(v1alpha1.ReasonInvalidSurface, "spec.surfaces.chat: %v", err)
		}
		if s.Stream {
			cfg.Stream = true
			if w.stream, err = chats.get(key, s, cfg); err != nil {
				return nil, Stall(v1alpha1.ReasonInvalidSurface, "spec.surfaces.chat: %v", err)
			}
		}
	}
	return w, nil
}

// chatConfig is the chat surface's client configuration, without
// streaming (the Stream surface gets a streaming copy).
func (d *Door) chatConfig(s *v1alpha1.ChatSurface, timeout time.Duration, replies httpdriver.ReplyBudget, client *http.Client) (surface.ChatConfig, error) {
	u, err := d.Allow.Check("spec.surfaces.chat.url", s.URL)
	if err != nil {
		return surface.ChatConfig{}, err
	}
	var extra map[string]any
	if s.ExtraBody != nil && len(s.ExtraBody.Raw) > 0 {
		if err := json.Unmarshal(s.ExtraBody.Raw, &extra); err != nil {
			return surface.ChatConfig{}, Stall(v1alpha1.ReasonInvalidSurface, "spec.surfaces.chat.extraBody: not a JSON object")
		}
	}
	return surface.ChatConfig{
		URL: u.String(), Model: s.Model, SystemPrompt: s.SystemPrompt, ExtraBody: extra, Citations: s.Citations,
		Timeout: timeout, ReplyBudget: replies, HTTPClient: client, SendClientHeaders: s.SendClientHeaders,
		History: d.History,
	}, nil
}
