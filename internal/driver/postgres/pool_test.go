package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ragcanary/ragcanary/internal/dev/pgtest"
)

// hostilePoolOptions are pool and cache options a tenant's connection
// string could carry: a zero health check period makes pgxpool's ticker
// panic, a nanosecond one spins, idle connections held open starve the
// server (3 here, enough to see; a tenant would ask for millions), and a
// cache preallocated at two billion entries exhausts memory on connect.
var hostilePoolOptions = []string{
	"pool_health_check_period=0s",
	"pool_health_check_period=1ns",
	"pool_min_idle_conns=3",
	"pool_min_conns=3",
	"pool_max_conns=100000",
	"pool_max_conn_lifetime=1ns",
	"pool_max_conn_idle_time=1ns",
	"pool_max_conn_lifetime_jitter=1ns",
	"statement_cache_capacity=2000000000",
	"description_cache_capacity=2000000000",
}

// TestPoolOptionsOfTheDSNDoNotSurvive: whatever pool option the parsed
// config carries, both pools run with the driver's own settings (checked
// before anything connects), and the driver then works against a real server.
func TestPoolOptionsOfTheDSNDoNotSurvive(t *testing.T) {
	s := pgtest.Start(t)
	for _, opt := range hostilePoolOptions {
		t.Run(opt, func(t *testing.T) {
			dsn := s.SuperDSN() + "&" + opt
			w, err := ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			r, err := ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(Config{Writer: w, Reader: r, Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			assertDriverPool(t, "writer", d.writer.Config(), DefaultWriterMaxConns)
			assertDriverPool(t, "reader", d.reader.Config(), DefaultReaderMaxConns)
			if t.Failed() {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := d.reader.Ping(ctx); err != nil {
				t.Fatalf("the reader pool does not reach the server: %v", err)
			}
		})
	}
}

func assertDriverPool(t *testing.T, side string, got *pgxpool.Config, maxConns int32) {
	t.Helper()
	for _, c := range []struct {
		field     string
		got, want any
	}{
		{"MaxConns", got.MaxConns, maxConns},
		{"MinConns", got.MinConns, int32(0)},
		{"MinIdleConns", got.MinIdleConns, int32(0)},
		{"HealthCheckPeriod", got.HealthCheckPeriod, healthCheckPeriod},
		{"MaxConnLifetime", got.MaxConnLifetime, maxConnLifetime},
		{"MaxConnLifetimeJitter", got.MaxConnLifetimeJitter, maxConnLifetimeJitter},
		{"MaxConnIdleTime", got.MaxConnIdleTime, maxConnIdleTime},
		{"StatementCacheCapacity", got.ConnConfig.StatementCacheCapacity, maxCachedStatements},
		{"DescriptionCacheCapacity", got.ConnConfig.DescriptionCacheCapacity, maxCachedStatements},
	} {
		if c.got != c.want {
			t.Errorf("%s pool %s = %v, want the driver's %v", side, c.field, c.got, c.want)
		}
	}
}
