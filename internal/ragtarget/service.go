// Package ragtarget is the reference permission-aware RAG service behind the
// ragtarget binary. It implements the driver contract (api/contract) with the
// behaviours that make revocations lag in production systems: a source store
// and a BM25 index synced on separate content and ACL schedules, a principal
// filter inside retrieval, an answer cache, lagging read replicas and fault
// injection. Each behaviour is a setting, so ragcanary's measurements can be
// checked against a known ground truth.
package ragtarget

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

// Service is a running reference RAG system.
type Service struct {
	cfg      Config
	src      *source
	ix       *indexer
	replicas []*replica // read targets in round-robin order; [0] is the primary
	lagging  []*laggingReplica
	next     atomic.Uint64
	cache    *answerCache
	// conversations are the persona conversations of contract v1.1.
	conversations *conversationStore
	handler       http.Handler
	// authz, when set, decides at query time which documents a principal reads.
	authz authorizer
	// jwt, when set, accepts the configured issuer's JWT access tokens.
	jwt *jwtVerifier
	// check, when set, is authz deciding for postfilter's candidates.
	check checker
	// digests is the derived-document job's state (digest.go).
	digests digester
	// groups, when set, copies memberships from the directory (groups.go).
	groups *groupSyncer

	stopOnce sync.Once
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New builds a service from cfg. Call Start to run the sync schedules, and
// Close to release it.
func New(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, src: newSource(), cache: newAnswerCache(cfg.AnswerCacheTTL, cfg.Clock),
		conversations: newConversationStore(cfg.MaxConversations)}
	if err := s.connectAuthz(); err != nil {
		return nil, err
	}
	if cfg.JWT != nil {
		j := *cfg.JWT
		if j.Now == nil {
			j.Now = cfg.Clock.Now
		}
		v, err := newJWTVerifier(j)
		if err != nil {
			return nil, err
		}
		s.jwt = v
	}
	if err := s.buildReplicas(); err != nil {
		return nil, err
	}
	s.ix = &indexer{
		src:               s.src,
		primary:           s.replicas[0],
		lagging:           s.lagging,
		chunkWords:        cfg.ChunkWords,
		groupsAtQueryTime: cfg.GroupsAtQueryTime,
		onApplied:         s.invalidateCache,
	}
	if cfg.Groups != nil {
		s.groups = &groupSyncer{src: s.src, groups: cfg.Groups, now: cfg.Clock.Now, onChanged: s.groupsChanged}
	}
	h, err := s.newHandler()
	if err != nil {
		_ = s.closeReplicas()
		return nil, err
	}
	s.handler = h
	return s, nil
}

func (s *Service) buildReplicas() error {
	for i := range s.cfg.Replicas {
		r, err := newReplica()
		if err != nil {
			_ = s.closeReplicas()
			return err
		}
		s.replicas = append(s.replicas, r)
		if i > 0 {
			s.lagging = append(s.lagging, &laggingReplica{replica: r, lag: s.cfg.ReplicaLag, clock: s.cfg.Clock, logger: s.cfg.Logger, onApplied: s.invalidateCache})
		}
	}
	return nil
}

// Handler serves the driver contract.
func (s *Service) Handler() http.Handler { return s.handler }

// Start runs the content and ACL sync schedules, and the directory group
// sync and the digest job when configured, until ctx ends or Close is called. The tickers exist when
// Start returns, so a test stepping a fake clock right after Start cannot
// miss a tick.
func (s *Service) Start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.startLoop(ctx, SyncContent, s.cfg.ContentSyncInterval)
	s.startLoop(ctx, SyncACL, s.cfg.ACLSyncInterval)
	s.startGroupSync(ctx)
	if s.cfg.DigestInterval > 0 {
		s.runEvery(ctx, s.cfg.DigestInterval, s.writeDigests)
	}
}

func (s *Service) startLoop(ctx context.Context, kind SyncKind, every time.Duration) {
	s.runEvery(ctx, every, func() {
		began := s.cfg.Clock.Now()
		changed, err := s.ix.sync(kind)
		if err != nil {
			s.cfg.Logger.Error("index sync failed", "kind", string(kind), "error", err)
		}
		// When each change reached the index: the truth a test
		// holds a measured exclusion against.
		if len(changed) > 0 {
			s.cfg.Logger.Debug("index sync applied", "kind", string(kind), "began", began.UTC().Format(time.RFC3339Nano),
				"documents", strings.Join(changed, ","))
		}
	})
}

// runEvery runs job on every tick of a ticker made before it returns, until
// ctx ends; Close waits for it.
func (s *Service) runEvery(ctx context.Context, every time.Duration, job func()) {
	t := s.cfg.Clock.NewTicker(every)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				job()
			}
		}
	}()
}

// Close stops the schedules (and the digest job) and releases the indexes.
func (s *Service) Close() error {
	var err error
	s.stopOnce.Do(func() {
		if s.cancel != nil {
			s.cancel()
		}
		s.wg.Wait()
		err = s.closeReplicas()
	})
	return err
}

func (s *Service) closeReplicas() error {
	var errs []error
	for _, r := range s.replicas {
		errs = append(errs, r.close())
	}
	return errors.Join(errs...)
}

// SyncNow runs one sync of kind immediately, as a tick would.
func (s *Service) SyncNow(kind SyncKind) error {
	if kind == SyncGroups {
		return s.syncGroupsNow()
	}
	_, err := s.ix.sync(kind)
	return err
}

func (s *Service) syncGroupsNow() error {
	if s.groups == nil {
		return errors.New("no group source is configured")
	}
	_, err := s.groups.sync(context.Background())
	return err
}

// SyncCount reports how many syncs of kind have run, so tests can wait for a
// tick to be processed instead of sleeping.
func (s *Service) SyncCount(kind SyncKind) uint64 {
	switch {
	case kind == SyncContent:
		return s.ix.contentSyncs.Load()
	case kind == SyncGroups && s.groups != nil:
		return s.groups.runs.Load()
	case kind == SyncGroups:
		return 0
	}
	return s.ix.aclSyncs.Load()
}

// ReplicaBacklog reports how many index changes lagging replicas have yet to
// apply, summed over replicas.
func (s *Service) ReplicaBacklog() int {
	n := 0
	for _, l := range s.lagging {
		n += l.backlog()
	}
	return n
}

// AnswerCacheExpiry reports when the cached answer to question for principal
// stops being served: the ground truth of a stale-cache exclusion for tests.
// The entry was stored exactly AnswerCacheTTL earlier. It returns false when
// no fresh answer is cached. Read-only: it neither serves nor evicts.
func (s *Service) AnswerCacheExpiry(principal, question string) (time.Time, bool) {
	return s.cache.expiry(principal, question)
}

// Capabilities is what this service reports on the contract.
func (s *Service) Capabilities() driver.Capabilities {
	return driver.Capabilities{
		ContractVersion:   driver.ContractVersion,
		RevocationMethods: []driver.RevocationMethod{v1alpha1.RevokeRemoveGrant, v1alpha1.RevokeRemoveFromGroup, v1alpha1.RevokeDeleteDocument, v1alpha1.RevokeUpdateContent},
		Answer:            true,
		Conversation:      true,
	}
}

// invalidateCache drops cached answers of principals whose visible content
// the primary just changed, unless the stale-cache defect is configured.
// Group principals stand for their current members.
func (s *Service) invalidateCache(affected map[string]struct{}) {
	if s.cfg.CacheIgnoresACLChanges {
		return
	}
	if s.authz != nil {
		// The index's access lists say nothing about who reads a document
		// the engine decides for: a deleted or rewritten document may be in
		// any persona's answers.
		s.cache.invalidate(s.personas())
		return
	}
	expanded := make(map[string]struct{}, len(affected))
	for p := range affected {
		expanded[p] = struct{}{}
		for _, m := range s.src.members(p) {
			expanded[m] = struct{}{}
		}
	}
	s.cache.invalidate(expanded)
}

// personas are the principals of every persona token.
func (s *Service) personas() map[string]struct{} {
	out := make(map[string]struct{}, len(s.cfg.Tokens))
	for _, p := range s.cfg.Tokens {
		out[p] = struct{}{}
	}
	return out
}

// principalsFor is the set a persona's query is filtered by.
func (s *Service) principalsFor(principal string) []string {
	if !s.cfg.GroupsAtQueryTime {
		return []string{principal}
	}
	return append([]string{principal}, s.src.groupsOf(principal)...)
}

// pick returns the next read replica, round-robin.
func (s *Service) pick() *replica {
	n := s.next.Add(1) - 1
	return s.replicas[n%uint64(len(s.replicas))]
}

// search runs one retrieval as principal on the next replica.
func (s *Service) search(ctx context.Context, principal, q string, k int) ([]scoredChunk, error) {
	if s.authz != nil {
		hits, _, err := s.authorizedSearch(ctx, principal, q, k)
		return hits, err
	}
	return s.pick().search(ctx, q, k, s.principalsFor(principal), s.cfg.FilterMode, s.cfg.CandidateDepth)
}

// answer builds an answer from the top passages, served from the cache when
// a fresh entry exists.
func (s *Service) answer(ctx context.Context, principal, question string) (answer, error) {
	if s.authz != nil {
		return s.authorizedAnswer(ctx, principal, question)
	}
	if a, ok := s.cache.get(principal, question); ok {
		return a, nil
	}
	hits, err := s.search(ctx, principal, question, s.cfg.AnswerPassages)
	if err != nil {
		return answer{}, err
	}
	a := composeAnswer(question, hits)
	s.cache.put(principal, question, a)
	return a, nil
}

// authorizedAnswer is answer when an engine decides: the cache cannot hear
// the engine's changes, so an answer is cached under the permission state
// its passages were filtered by (see authorizedSearch), and retrieval runs
// first to learn that state. The principal stays the entry's own key so
// invalidateCache still reaches it.
func (s *Service) authorizedAnswer(ctx context.Context, principal, question string) (answer, error) {
	hits, view, err := s.authorizedSearch(ctx, principal, question, s.cfg.AnswerPassages)
	if err != nil {
		return answer{}, err
	}
	keyed := view + "\x00" + question
	if a, ok := s.cache.get(principal, keyed); ok {
		return a, nil
	}
	a := composeAnswer(question, hits)
	s.cache.put(principal, keyed, a)
	return a, nil
}
