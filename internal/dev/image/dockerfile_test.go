package image

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// finalStage is what the Dockerfile's last stage gives its image.
type finalStage struct {
	copyDest   string
	user       string
	entrypoint []string
}

// parseFinalStage reads the instructions after the last FROM, joining
// continued lines and dropping comments.
func parseFinalStage(t *testing.T, path string) finalStage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var instrs []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		instrs = append(instrs, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	var st finalStage
	for _, in := range instrs {
		keyword, rest, _ := strings.Cut(in, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(keyword) {
		case "FROM":
			st = finalStage{}
		case "COPY":
			args := strings.Fields(rest)
			st.copyDest = args[len(args)-1]
		case "USER":
			st.user = rest
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &st.entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s is not the exec form: %v", rest, err)
			}
		}
	}
	return st
}

// The Dockerfile stays for people who build with Docker; an image from it
// and one from make image must run the same program the same way.
func TestManagerImageMatchesTheDockerfile(t *testing.T) {
	root := repoRoot(t)
	st := parseFinalStage(t, filepath.Join(root, "Dockerfile"))
	if st.copyDest == "" || st.user == "" || len(st.entrypoint) == 0 {
		t.Fatalf("Dockerfile final stage %+v lacks COPY, USER or ENTRYPOINT", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	in := testInputs(t, t.TempDir())
	in.Platforms = []v1.Platform{Platforms[0]}
	b, err := Build(ctx, in, Manager)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := b.Images[0].ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != st.user {
		t.Errorf("user %q, Dockerfile USER %q", cfg.Config.User, st.user)
	}
	if !reflect.DeepEqual(cfg.Config.Entrypoint, st.entrypoint) {
		t.Errorf("entrypoint %q, Dockerfile ENTRYPOINT %q", cfg.Config.Entrypoint, st.entrypoint)
	}
	layers, err := b.Images[0].Layers()
	if err != nil {
		t.Fatal(err)
	}
	files := layerFiles(t, layers[len(layers)-1])
	if names := fileNames(files); len(names) != 1 || "/"+names[0] != st.copyDest {
		t.Errorf("binary layer holds %q, Dockerfile copies the manager to %s", names, st.copyDest)
	}
	if b.Binaries[0].Info.Path != "github.com/ragcanary/ragcanary/cmd/manager" {
		t.Errorf("binary is %s", b.Binaries[0].Info.Path)
	}
}
