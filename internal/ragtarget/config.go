package ragtarget

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

// FilterMode says where the principal filter is applied during retrieval.
type FilterMode string

const (
	// FilterPrefilter applies the principal filter inside the search query, so
	// ranking only ever sees permitted passages. The correct behaviour.
	FilterPrefilter FilterMode = "prefilter"
	// FilterPostfilter fetches CandidateDepth unfiltered candidates and drops
	// forbidden ones afterwards: narrow personas get short or empty results.
	FilterPostfilter FilterMode = "postfilter"
	// FilterNone ignores access lists entirely: a deliberate leak for negative tests.
	FilterNone FilterMode = "none"
)

// FaultScope selects which calls fault injection applies to.
type FaultScope string

const (
	// FaultScopeAll injects faults into source-side and persona-side calls.
	FaultScopeAll FaultScope = "all"
	// FaultScopePersona injects faults into search and answer only.
	FaultScopePersona FaultScope = "persona"
	// FaultScopeSource injects faults into document, grant and group calls only.
	FaultScopeSource FaultScope = "source"
)

// Faults configures fault injection. Rates are probabilities in [0, 1].
type Faults struct {
	// ErrorRate is the share of calls answered with 503.
	ErrorRate float64
	// TimeoutRate is the share of calls that hang until the client gives up.
	TimeoutRate float64
	// MalformedRate is the share of calls answered 200 with unparseable JSON.
	MalformedRate float64
	// Latency is added to every call in scope.
	Latency time.Duration
	// Scope limits which calls are affected; FaultScopeAll when empty.
	Scope FaultScope
	// Seed makes the fault sequence reproducible; 0 picks a random seed.
	Seed uint64
}

func (f Faults) active() bool {
	return f.ErrorRate > 0 || f.TimeoutRate > 0 || f.MalformedRate > 0 || f.Latency > 0
}

// Defaults applied by New when a field is zero.
const (
	DefaultContentSyncInterval = 30 * time.Second
	DefaultACLSyncInterval     = 60 * time.Second
	DefaultCandidateDepth      = 50
	DefaultChunkWords          = 100
	DefaultAnswerPassages      = 3
	// maxTimeoutHang bounds how long an injected timeout holds a request when
	// the client never gives up.
	maxTimeoutHang = 5 * time.Minute
)

// Config configures a Service.
type Config struct {
	// SourceToken authenticates source-side calls; required.
	SourceToken string
	// Tokens maps persona bearer tokens to principals.
	Tokens map[string]string

	// ContentSyncInterval is how often new, changed and deleted documents
	// reach the index.
	ContentSyncInterval time.Duration
	// ACLSyncInterval is how often grant and membership changes reach the index.
	ACLSyncInterval time.Duration
	// GroupsAtQueryTime resolves a persona's groups from the source on every
	// query instead of expanding groups into access lists at sync time.
	GroupsAtQueryTime bool

	// FilterMode selects prefilter (default), postfilter or none.
	FilterMode FilterMode
	// CandidateDepth is how many unfiltered candidates postfilter fetches.
	CandidateDepth int
	// ChunkWords is the passage size in words.
	ChunkWords int

	// AnswerPassages is how many top passages an answer is built from.
	AnswerPassages int
	// AnswerCacheTTL is how long an answer is cached per (principal, question);
	// zero disables the cache.
	AnswerCacheTTL time.Duration
	// CacheIgnoresACLChanges keeps cached answers after an access change until
	// their TTL: the classic stale-cache defect.
	CacheIgnoresACLChanges bool

	// MaxConversations bounds the conversations kept in memory; the oldest
	// started is evicted first. DefaultMaxConversations when zero.
	MaxConversations int
	// ConversationReusesHistory makes follow-up turns answer from the
	// passages earlier turns cited, without re-authorising them: the defect
	// under which revoked content stays in a conversation forever.
	ConversationReusesHistory bool

	// Replicas is the number of index copies serving reads round-robin,
	// including the primary; 1 when zero.
	Replicas int
	// ReplicaLag is how long after the primary each other replica applies an
	// index change.
	ReplicaLag time.Duration

	// Faults configures fault injection.
	Faults Faults

	// Authz, when set, filters retrieval by SpiceDB at query time instead of
	// by the index's own access lists (the ACL sync then no longer matters).
	Authz *SpiceDBAuthz
	// OpenFGA, when set, does the same with OpenFGA; set at most one of
	// Authz and OpenFGA. FilterMode then no longer matters: OpenFGA's own
	// Filter says where its permission filter applies.
	OpenFGA *OpenFGAAuthz

	// Clock drives sync schedules, replica lag and cache expiry; the real
	// clock when nil. Tests inject a fake clock to step through sync ticks.
	Clock clock.WithTickerAndDelayedExecution
	// Logger receives operational logs; slog.Default() when nil.
	Logger *slog.Logger
}

// withDefaults fills zero fields.
func (c Config) withDefaults() Config {
	if c.ContentSyncInterval == 0 {
		c.ContentSyncInterval = DefaultContentSyncInterval
	}
	if c.ACLSyncInterval == 0 {
		c.ACLSyncInterval = DefaultACLSyncInterval
	}
	if c.FilterMode == "" {
		c.FilterMode = FilterPrefilter
	}
	if c.CandidateDepth == 0 {
		c.CandidateDepth = DefaultCandidateDepth
	}
	if c.ChunkWords == 0 {
		c.ChunkWords = DefaultChunkWords
	}
	if c.AnswerPassages == 0 {
		c.AnswerPassages = DefaultAnswerPassages
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.MaxConversations == 0 {
		c.MaxConversations = DefaultMaxConversations
	}
	if c.Faults.Scope == "" {
		c.Faults.Scope = FaultScopeAll
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.OpenFGA != nil {
		c.OpenFGA = c.OpenFGA.withDefaults()
	}
	return c
}

// validate rejects settings the service cannot run with. Messages never
// include token values.
func (c Config) validate() error {
	var errs []error
	if c.SourceToken == "" {
		errs = append(errs, errors.New("a source token is required"))
	}
	for tok, principal := range c.Tokens {
		if tok == "" || principal == "" {
			errs = append(errs, errors.New("persona tokens and principals must not be empty"))
			break
		}
		if tok == c.SourceToken {
			errs = append(errs, errors.New("a persona token must differ from the source token"))
			break
		}
	}
	if c.ContentSyncInterval < 0 || c.ACLSyncInterval < 0 {
		errs = append(errs, errors.New("sync intervals must be positive"))
	}
	switch c.FilterMode {
	case FilterPrefilter, FilterPostfilter, FilterNone:
	default:
		errs = append(errs, fmt.Errorf("filter mode %q is not one of prefilter, postfilter, none", c.FilterMode))
	}
	if c.CandidateDepth < 1 || c.ChunkWords < 1 || c.AnswerPassages < 1 {
		errs = append(errs, errors.New("candidate depth, chunk words and answer passages must be at least 1"))
	}
	if c.AnswerCacheTTL < 0 || c.ReplicaLag < 0 || c.Faults.Latency < 0 {
		errs = append(errs, errors.New("cache TTL, replica lag and fault latency must not be negative"))
	}
	if c.Replicas < 1 {
		errs = append(errs, errors.New("replicas must be at least 1"))
	}
	if c.MaxConversations < 1 {
		errs = append(errs, errors.New("max conversations must be at least 1"))
	}
	errs = append(errs, c.Faults.validate())
	errs = append(errs, c.validateAuthz())
	return errors.Join(errs...)
}

func (f Faults) validate() error {
	for _, r := range []float64{f.ErrorRate, f.TimeoutRate, f.MalformedRate} {
		if r < 0 || r > 1 {
			return errors.New("fault rates must be between 0 and 1")
		}
	}
	switch f.Scope {
	case FaultScopeAll, FaultScopePersona, FaultScopeSource:
		return nil
	default:
		return fmt.Errorf("fault scope %q is not one of all, persona, source", f.Scope)
	}
}
