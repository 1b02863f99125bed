// Command ragtarget runs the reference permission-aware RAG service that
// implements the ragcanary driver contract. See docs/ragtarget.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ragcanary/ragcanary/internal/directory"
	"github.com/ragcanary/ragcanary/internal/openfga"
	"github.com/ragcanary/ragcanary/internal/ragtarget"
	"github.com/ragcanary/ragcanary/internal/spicedb"
)

// defaultConsistency is both engines' name for their fastest reads.
const defaultConsistency = "minimize_latency"

// shutdownGrace bounds how long in-flight requests may finish on SIGTERM.
const shutdownGrace = 10 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// options holds what the flags produce besides the service config.
type options struct {
	listen     string
	tokensFile string
	tokenFlags tokenList
	logLevel   string
	filterMode string
	faultScope string
	// authzEndpoint (SpiceDB) or openfgaURL and openfgaStore (OpenFGA)
	// choose the query-time authorization engine; authzConsistency and
	// authzFilter say how it is asked.
	authzEndpoint    string
	openfgaURL       string
	openfgaStore     string
	authzConsistency string
	authzFilter      string
	// streamReauthorize and digestACL are parsed into the config by complete.
	streamReauthorize string
	digestACL         string
	// groups name the directory group memberships are read from; directory
	// is it once opened.
	groups    groupFlags
	directory *directory.Directory
	// jwt are the OAuth2 resource-server flags; JWKSURL set turns it on.
	jwt ragtarget.JWTConfig
	cfg ragtarget.Config
}

// tokenList collects repeatable --token token=principal flags. String never
// prints the tokens.
type tokenList map[string]string

func (t tokenList) String() string { return fmt.Sprintf("%d tokens", len(t)) }

func (t tokenList) Set(v string) error {
	tok, p, err := ragtarget.ParseTokenFlag(v)
	if err != nil {
		return err
	}
	t[tok] = p
	return nil
}

func newFlagSet(o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("ragtarget", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &o.cfg
	o.tokenFlags = tokenList{}
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8089", "address to serve the driver contract on")
	fs.StringVar(&c.SourceToken, "source-token", "", "bearer credential for source-side calls (documents, grants, groups); defaults to $RAGTARGET_SOURCE_TOKEN")
	fs.StringVar(&o.tokensFile, "tokens-file", "", "JSON or YAML file mapping persona bearer tokens to principals ({token: principal})")
	fs.Var(o.tokenFlags, "token", "persona token mapping token=principal; repeatable")
	fs.DurationVar(&c.ContentSyncInterval, "content-sync-interval", ragtarget.DefaultContentSyncInterval, "how often new, changed and deleted documents reach the index")
	fs.DurationVar(&c.ACLSyncInterval, "acl-sync-interval", ragtarget.DefaultACLSyncInterval, "how often grant, revocation and group membership changes reach the index")
	fs.BoolVar(&c.GroupsAtQueryTime, "groups-at-query-time", false, "resolve a persona's groups on every query instead of expanding groups at ACL sync")
	fs.StringVar(&o.filterMode, "filter-mode", string(ragtarget.FilterPrefilter), "principal filter: prefilter (inside the query), postfilter (filter --candidate-depth unfiltered hits) or none (deliberate leak)")
	fs.IntVar(&c.CandidateDepth, "candidate-depth", ragtarget.DefaultCandidateDepth, "unfiltered candidates fetched in postfilter mode")
	fs.IntVar(&c.ChunkWords, "chunk-words", ragtarget.DefaultChunkWords, "passage size in words")
	fs.IntVar(&c.AnswerPassages, "answer-passages", ragtarget.DefaultAnswerPassages, "top passages an answer is built from")
	fs.DurationVar(&c.AnswerCacheTTL, "answer-cache-ttl", time.Minute, "how long answers are cached per (principal, question); 0 disables the cache")
	fs.BoolVar(&c.CacheIgnoresACLChanges, "cache-ignores-acl-changes", false, "keep serving cached answers after an access change until the TTL (stale-cache defect)")
	fs.IntVar(&c.MaxConversations, "max-conversations", ragtarget.DefaultMaxConversations, "conversations kept in memory; the oldest started is evicted first")
	fs.BoolVar(&c.ConversationReusesHistory, "conversation-reuses-history", false, "answer follow-up turns from the passages earlier turns cited, without re-authorising them (conversation-memory defect)")
	fs.IntVar(&c.Replicas, "replicas", 1, "index copies serving reads round-robin, including the primary")
	fs.DurationVar(&c.ReplicaLag, "replica-lag", 0, "delay after which non-primary replicas apply each index change")
	fs.Float64Var(&c.Faults.ErrorRate, "fault-error-rate", 0, "share of calls answered 503")
	fs.DurationVar(&c.Faults.Latency, "fault-latency", 0, "latency added to every call in fault scope")
	fs.Float64Var(&c.Faults.TimeoutRate, "fault-timeout-rate", 0, "share of calls that hang until the client gives up")
	fs.Float64Var(&c.Faults.MalformedRate, "fault-malformed-rate", 0, "share of search/answer calls answered 200 with truncated JSON")
	fs.StringVar(&o.faultScope, "fault-scope", string(ragtarget.FaultScopeAll), "calls faults apply to: all, persona (search, answer, conversations) or source (documents, grants, groups)")
	fs.Uint64Var(&c.Faults.Seed, "fault-seed", 0, "seed for the fault sequence; 0 picks a random one")
	fs.StringVar(&o.authzEndpoint, "authz-spicedb-endpoint", "", "ask SpiceDB (HOST:PORT, plaintext gRPC; key from $RAGTARGET_SPICEDB_KEY) at query time which documents a persona may read, instead of the index's own ACL sync")
	fs.StringVar(&o.openfgaURL, "authz-openfga-url", "", "ask OpenFGA (http://HOST:PORT of its HTTP API; token from $RAGTARGET_OPENFGA_TOKEN) at query time which documents a persona may read, instead of the index's own ACL sync")
	fs.StringVar(&o.openfgaStore, "authz-openfga-store", "", "ID of the OpenFGA store holding the tuples; the reference model is written into it when it has none")
	fs.StringVar(&o.authzConsistency, "authz-consistency", defaultConsistency, "consistency of query-time lookups: minimize_latency (SpiceDB: quantized; OpenFGA: its caches; both may lag revocations), fully_consistent (SpiceDB) or higher_consistency (OpenFGA)")
	fs.StringVar(&o.authzFilter, "authz-filter", string(ragtarget.FilterPrefilter), "where OpenFGA's permission filter applies: prefilter (ListObjects filters retrieval) or postfilter (check each of --candidate-depth unfiltered hits); SpiceDB answers prefilter only")
	fs.DurationVar(&c.StreamChunkInterval, "stream-chunk-interval", 0, "pause between the chunks of a streamed chat completion, so a stream can be revoked mid-way; 0 streams at once")
	fs.StringVar(&o.streamReauthorize, "stream-reauthorize", string(ragtarget.ReauthorizeNone), "re-check a streaming answer's documents: none, per-chunk (before every content chunk) or interval=D (once D passed since the last check); a lost access ends the stream with an access_revoked error event")
	fs.DurationVar(&c.DigestInterval, "digest-interval", 0, "derive a digest document per collection (document ID up to its first '-') of recent documents this often, written into the source like any document; 0 derives none")
	fs.StringVar(&o.digestACL, "digest-acl", string(ragtarget.DigestMostRestrictive), "who may read a digest: most-restrictive (readers of every source, correct), union (readers of any source, a bug) or public (every persona, a bug)")
	o.groups.register(fs)
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&o.jwt.JWKSURL, "oauth2-jwks-url", "", "also accept persona bearer tokens that are JWT access tokens (RS256) of one OAuth2 issuer, verified locally by the keys published here, until their exp (as a resource server that does not ask the issuer does)")
	fs.StringVar(&o.jwt.Issuer, "oauth2-issuer", "", "the iss a JWT access token must carry (required with --oauth2-jwks-url)")
	fs.StringVar(&o.jwt.Audience, "oauth2-audience", "", "when set, a JWT access token's aud must include it")
	fs.StringVar(&o.jwt.PrincipalClaim, "oauth2-principal-claim", "sub", "the JWT claim that names the principal (for a client-credentials token, sub is the client ID)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ragtarget [flags]\n\nReference permission-aware RAG service implementing the ragcanary driver contract v1.1.\nTokens are never logged.\n\nflags:\n")
		fs.PrintDefaults()
	}
	return fs
}

func run(args []string, stderr io.Writer) int {
	var o options
	fs := newFlagSet(&o, stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	logger, err := newLogger(o.logLevel, stderr)
	if err == nil {
		err = o.complete(logger)
	}
	defer o.closeDirectory()
	if err != nil {
		fmt.Fprintf(stderr, "ragtarget: %v\n", err)
		return 2
	}
	svc, err := ragtarget.New(o.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "ragtarget: %v\n", err)
		return 2
	}
	defer func() { _ = svc.Close() }()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, svc, o.listen, logger); err != nil {
		logger.Error("server failed", "error", err)
		return 1
	}
	return 0
}

// complete fills what flags alone cannot: the environment fallback for the
// source token, the tokens file, typed enums, and the directory groups are
// read from.
func (o *options) complete(logger *slog.Logger) error {
	if o.cfg.SourceToken == "" {
		o.cfg.SourceToken = os.Getenv("RAGTARGET_SOURCE_TOKEN")
	}
	tokens := map[string]string{}
	if o.tokensFile != "" {
		fromFile, err := ragtarget.LoadTokens(o.tokensFile)
		if err != nil {
			return err
		}
		for t, p := range fromFile {
			tokens[t] = p
		}
	}
	for t, p := range o.tokenFlags {
		tokens[t] = p
	}
	o.cfg.Tokens = tokens
	o.cfg.FilterMode = ragtarget.FilterMode(o.filterMode)
	o.cfg.Faults.Scope = ragtarget.FaultScope(o.faultScope)
	o.cfg.DigestACL = ragtarget.DigestACL(o.digestACL)
	o.cfg.Logger = logger
	reauth, err := ragtarget.ParseStreamReauthorize(o.streamReauthorize)
	if err != nil {
		return fmt.Errorf("--stream-reauthorize %w", err)
	}
	o.cfg.StreamReauthorize = reauth
	if err := o.completeAuthz(); err != nil {
		return err
	}
	if err := o.completeJWT(); err != nil {
		return err
	}
	return o.completeGroups()
}

// completeJWT turns the resource-server flags into the service's settings.
func (o *options) completeJWT() error {
	switch {
	case o.jwt.JWKSURL == "" && (o.jwt.Issuer != "" || o.jwt.Audience != ""):
		return errors.New("--oauth2-issuer and --oauth2-audience need --oauth2-jwks-url")
	case o.jwt.JWKSURL == "":
		return nil
	case o.jwt.Issuer == "":
		return errors.New("--oauth2-jwks-url needs --oauth2-issuer")
	}
	if u, err := url.Parse(o.jwt.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("--oauth2-jwks-url must be an absolute http or https URL")
	}
	jwt := o.jwt
	o.cfg.JWT = &jwt
	return nil
}

// completeAuthz builds the query-time engine's settings. Which
// consistencies an engine knows, and that only one engine is chosen, the
// service's own validation says; here only what it cannot see: flags that
// configure no engine, and postfilter asked of SpiceDB (which ragtarget
// asks with LookupResources only).
func (o *options) completeAuthz() error {
	spice, fga := o.authzEndpoint != "", o.openfgaURL != "" || o.openfgaStore != ""
	filter := ragtarget.FilterMode(o.authzFilter)
	switch {
	case !spice && !fga && (o.authzConsistency != defaultConsistency || filter != ragtarget.FilterPrefilter):
		return errors.New("--authz-consistency and --authz-filter need --authz-spicedb-endpoint or --authz-openfga-url")
	case spice && !fga && filter != ragtarget.FilterPrefilter:
		return fmt.Errorf("--authz-filter %s needs OpenFGA: SpiceDB is asked for the readable set only (prefilter)", o.authzFilter)
	}
	if spice {
		o.cfg.Authz = &ragtarget.SpiceDBAuthz{Endpoint: o.authzEndpoint, Key: os.Getenv("RAGTARGET_SPICEDB_KEY"),
			Consistency: spicedb.Consistency(o.authzConsistency)}
	}
	if fga {
		o.cfg.OpenFGA = &ragtarget.OpenFGAAuthz{URL: o.openfgaURL, Store: o.openfgaStore, Token: os.Getenv("RAGTARGET_OPENFGA_TOKEN"),
			Consistency: openfga.Consistency(o.authzConsistency), Filter: filter}
	}
	return nil
}

func newLogger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("invalid --log-level %q", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// serve runs the service until ctx ends, then drains in-flight requests.
func serve(ctx context.Context, svc *ragtarget.Service, addr string, logger *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: svc.Handler(), ReadHeaderTimeout: 10 * time.Second}
	svc.Start(ctx)
	logger.Info("ragtarget listening", "address", ln.Addr().String())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}
