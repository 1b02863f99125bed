package postgres

import (
	"math"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/driver"
)

func TestClassifyCode(t *testing.T) {
	for _, c := range []struct {
		code string
		want driver.Kind
	}{
		{"28P01", driver.Unauthorized}, // invalid_password
		{"28000", driver.Unauthorized}, // invalid_authorization_specification
		{"42501", driver.Unauthorized}, // insufficient_privilege: fixed by a GRANT
		{"42P01", driver.Permanent},    // undefined_table
		{"23503", driver.Permanent},    // foreign_key_violation (grant on a missing document)
		{"25006", driver.Permanent},    // read_only_sql_transaction: writer DSN names a standby
		{"08006", driver.Transient},    // connection_failure
		{"57P01", driver.Transient},    // admin_shutdown
		{"57014", driver.Transient},    // query_canceled (statement timeout)
		{"40001", driver.Transient},    // serialization_failure, also standby conflicts
		{"53300", driver.Transient},    // too_many_connections
		{"XX000", driver.Transient},    // internal_error
	} {
		if got, _ := classifyCode(c.code); got != c.want {
			t.Errorf("%s: %s, want %s", c.code, got, c.want)
		}
	}
}

func TestEmbedIsDeterministicAndNormalised(t *testing.T) {
	a, b := Embed("The quick brown fox"), Embed("the QUICK brown, fox!")
	var norm float64
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("embeddings differ at %d for texts differing only in case and punctuation", i)
		}
		norm += float64(a[i]) * float64(a[i])
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Fatalf("norm² %v, want 1", norm)
	}
	if e := Embed(""); e[0] != 1 {
		t.Fatalf("the empty text embeds as %v, want a fixed unit vector", e[:3])
	}
	if lit := VectorLiteral([]float32{1, -0.5}); lit != "[1,-0.5]" {
		t.Fatalf("literal %q", lit)
	}
}

func TestChunks(t *testing.T) {
	for _, c := range []struct {
		name, title, body string
		want              int
	}{
		{"title joins the first paragraph", "T", "a\n\nb", 2},
		{"empty body keeps the title", "T", "", 1},
		{"nothing at all is one empty chunk", "", " ", 1},
		{"a long paragraph is cut", "", strings.Repeat("word ", 500), 3},
	} {
		got := Chunks(c.title, c.body)
		if len(got) != c.want {
			t.Errorf("%s: %d chunks, want %d", c.name, len(got), c.want)
		}
		for _, ch := range got {
			if len([]rune(ch)) > maxChunkRunes+len(c.title)+1 {
				t.Errorf("%s: a chunk of %d runes", c.name, len([]rune(ch)))
			}
		}
	}
	if got := Chunks("T", "a\n\nb"); got[0] != "T\na" {
		t.Fatalf("first chunk %q", got[0])
	}
}
