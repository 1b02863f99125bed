package ragtarget

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
	// JWT, when set, also accepts persona bearer tokens that are JWT access
	// tokens of one OAuth2 issuer, verified by its keys (jwt.go).
	JWT *JWTConfig

	// ContentSyncInterval is how often new, changed and deleted documents
	// reach the index.
	ContentSyncInterval time.Duration
	// ACLSyncInterval is how often grant and membership changes reach the index.
	ACLSyncInterval time.Duration
	// GroupsAtQueryTime resolves a persona's groups from the source on every
	// query instead of expanding groups into access lists at sync time.
	GroupsAtQueryTime bool
	// Groups, when set, is the directory group memberships are read from
	// every GroupsSyncInterval (groups.go); the contract's membership calls
	// are then refused.
	Groups GroupSource
	// GroupsSyncInterval is how often Groups is read;
	// DefaultGroupsSyncInterval when zero and Groups is set.
	GroupsSyncInterval time.Duration

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

	// StreamChunkInterval is the pause before each streamed chat chunk
	// after the first, so a stream lasts long enough to be revoked mid-way;
	// zero streams at once.
	StreamChunkInterval time.Duration
	// StreamReauthorize says when a streaming answer re-checks the
	// persona's access to the documents it draws on; never by default.
	StreamReauthorize StreamReauthorize

	// DigestInterval is how often a digest document is derived per
	// collection of documents (see digest.go); zero derives none.
	DigestInterval time.Duration
	// DigestACL decides who may read a digest; most-restrictive when empty.
	DigestACL DigestACL

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
	if c.Groups != nil && c.GroupsSyncInterval == 0 {
		c.GroupsSyncInterval = DefaultGroupsSyncInterval
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
	if c.StreamReauthorize.Mode == "" {
		c.StreamReauthorize.Mode = ReauthorizeNone
	}
	if c.DigestACL == "" {
		c.DigestACL = DigestMostRestrictive
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
	errs = append(errs, c.validateAuthz(), c.validateGroups())
	errs = append(errs, c.validateStreaming(), c.validateDigest())
	return errors.Join(errs...)
}

// ReauthorizeMode names when a stream re-checks access.
type ReauthorizeMode string

const (
	// ReauthorizeNone never re-checks: a stream begun before a revocation
	// runs to its end, as most assistants' streams do.
	ReauthorizeNone ReauthorizeMode = "none"
	// ReauthorizePerChunk re-checks before every content chunk.
	ReauthorizePerChunk ReauthorizeMode = "per-chunk"
	// ReauthorizeInterval re-checks before a content chunk once Every has
	// passed since the last decision.
	ReauthorizeInterval ReauthorizeMode = "interval"
)

// StreamReauthorize is the --stream-reauthorize policy.
type StreamReauthorize struct {
	// Mode is none, per-chunk or interval.
	Mode ReauthorizeMode
	// Every is the interval mode's period; zero in the other modes.
	Every time.Duration
}

// ParseStreamReauthorize reads none, per-chunk or interval=D.
func ParseStreamReauthorize(v string) (StreamReauthorize, error) {
	mode, every, hasEvery := strings.Cut(v, "=")
	switch {
	case !hasEvery && (mode == string(ReauthorizeNone) || mode == string(ReauthorizePerChunk)):
		return StreamReauthorize{Mode: ReauthorizeMode(mode)}, nil
	case hasEvery && mode == string(ReauthorizeInterval):
		d, err := time.ParseDuration(every)
		if err != nil || d <= 0 {
			return StreamReauthorize{}, fmt.Errorf("%q: the interval must be a positive duration, e.g. interval=2s", v)
		}
		return StreamReauthorize{Mode: ReauthorizeInterval, Every: d}, nil
	}
	return StreamReauthorize{}, fmt.Errorf("%q is not one of none, per-chunk, interval=D", v)
}

// String is the flag form ParseStreamReauthorize reads.
func (r StreamReauthorize) String() string {
	if r.Mode == ReauthorizeInterval {
		return string(r.Mode) + "=" + r.Every.String()
	}
	return string(r.Mode)
}

func (c Config) validateStreaming() error {
	var errs []error
	if c.StreamChunkInterval < 0 {
		errs = append(errs, errors.New("the stream chunk interval must not be negative"))
	}
	switch r := c.StreamReauthorize; {
	case r.Mode == ReauthorizeInterval && r.Every <= 0:
		errs = append(errs, errors.New("stream reauthorize interval needs a positive period (interval=D)"))
	case r.Mode == ReauthorizeNone || r.Mode == ReauthorizePerChunk:
		if r.Every != 0 {
			errs = append(errs, fmt.Errorf("stream reauthorize %s takes no period; use interval=D", r.Mode))
		}
	case r.Mode != ReauthorizeInterval:
		errs = append(errs, fmt.Errorf("stream reauthorize %q is not one of none, per-chunk, interval=D", r.Mode))
	}
	return errors.Join(errs...)
}

// DigestACL is the rule deciding who may read a digest document.
type DigestACL string

const (
	// DigestMostRestrictive lets read a digest only the principals allowed
	// on every document it was built from: the correct lineage rule.
	DigestMostRestrictive DigestACL = "most-restrictive"
	// DigestUnion lets read it anyone allowed on any of its sources: the
	// bug by which a restricted fact escapes to its neighbours' readers.
	DigestUnion DigestACL = "union"
	// DigestPublic lets every persona read it: the bug by which a
	// restricted fact escapes into a "general" collection.
	DigestPublic DigestACL = "public"
)

func (c Config) validateDigest() error {
	var errs []error
	if c.DigestInterval < 0 {
		errs = append(errs, errors.New("the digest interval must not be negative"))
	}
	switch c.DigestACL {
	case DigestMostRestrictive, DigestUnion, DigestPublic:
	default:
		errs = append(errs, fmt.Errorf("digest ACL %q is not one of most-restrictive, union, public", c.DigestACL))
	}
	if c.DigestInterval > 0 && (c.Authz != nil || c.OpenFGA != nil) {
		// The engine decides every read and holds no relationship for a
		// document ragtarget itself wrote: the digest's ACL would decide nothing.
		errs = append(errs, errors.New("digests need the index's own access lists: a query-time engine (SpiceDB, OpenFGA) holds no grants for a digest"))
	}
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
