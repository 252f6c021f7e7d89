package deploytest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// dockerInstruction is one Dockerfile instruction with its continuation lines joined.
type dockerInstruction struct {
	line int
	cmd  string // upper case
	args string
}

type dockerStage struct {
	image, name string
	platform    string
	insts       []dockerInstruction
}

// parseDockerfile is a small parser for the subset of the Dockerfile syntax this repository
// uses: comments, line continuations, global ARGs with defaults, and FROM ... AS stages.
func parseDockerfile(data string) (globalArgs map[string]string, stages []*dockerStage, err error) {
	globalArgs = map[string]string{}
	var insts []dockerInstruction
	var cur strings.Builder
	start := 0
	for i, raw := range strings.Split(data, "\n") {
		line := strings.TrimSpace(raw)
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if cur.Len() > 0 && strings.HasPrefix(line, "#") {
			continue // comments inside a continued instruction are dropped by Docker too
		}
		if cur.Len() == 0 {
			start = i + 1
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		insts = append(insts, dockerInstruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)})
		cur.Reset()
	}
	if cur.Len() > 0 {
		return nil, nil, fmt.Errorf("line %d: the file ends inside a continued instruction", start)
	}
	for _, in := range insts {
		switch {
		case in.cmd == "FROM":
			fields := strings.Fields(in.args)
			st := &dockerStage{}
			for len(fields) > 0 && strings.HasPrefix(fields[0], "--") {
				if p, ok := strings.CutPrefix(fields[0], "--platform="); ok {
					st.platform = p
				}
				fields = fields[1:]
			}
			switch {
			case len(fields) == 1:
			case len(fields) == 3 && strings.EqualFold(fields[1], "AS"):
				st.name = fields[2]
			default:
				return nil, nil, fmt.Errorf("line %d: cannot read FROM %s", in.line, in.args)
			}
			st.image = os.Expand(fields[0], func(k string) string { return globalArgs[k] })
			stages = append(stages, st)
		case len(stages) == 0 && in.cmd == "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			globalArgs[k] = v
		case len(stages) == 0:
			return nil, nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
		default:
			stages[len(stages)-1].insts = append(stages[len(stages)-1].insts, in)
		}
	}
	return globalArgs, stages, nil
}

func TestDockerfile(t *testing.T) {
	_, stages, err := parseDockerfile(string(readRepoFile(t, "Dockerfile")))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("%d stages, want a builder and a runtime stage", len(stages))
	}
	build, final := stages[0], stages[1]

	t.Run("builder", func(t *testing.T) {
		image, tag, _ := strings.Cut(build.image, ":")
		if image != "golang" {
			t.Errorf("builder image %s, want golang", build.image)
		}
		if goMinor := goDirectiveMinor(t); tag != goMinor && !strings.HasPrefix(tag, goMinor+".") && !strings.HasPrefix(tag, goMinor+"-") {
			t.Errorf("builder golang:%s does not match the go %s directive of go.mod", tag, goMinor)
		}
		if build.platform != "$BUILDPLATFORM" {
			t.Errorf("builder platform %q, want $BUILDPLATFORM (cross-compile instead of emulating)", build.platform)
		}
		if build.name == "" {
			t.Error("builder stage has no name")
		}
		var goBuild string
		var copied []string
		for _, in := range build.insts {
			switch in.cmd {
			case "RUN":
				if strings.Contains(in.args, "go build") {
					goBuild = in.args
				}
			case "COPY":
				fields := strings.Fields(in.args)
				copied = append(copied, fields[:len(fields)-1]...)
			case "ADD":
				t.Errorf("line %d: ADD (use COPY; ADD fetches URLs and unpacks archives)", in.line)
			}
		}
		for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X github.com/nodekeeper/nodekeeper/internal/buildinfo.version=${VERSION}",
			"-X github.com/nodekeeper/nodekeeper/internal/buildinfo.commit=${COMMIT}", "-X github.com/nodekeeper/nodekeeper/internal/buildinfo.date=${BUILD_DATE}", "-o /out/nodekeeper-controller", "./cmd/nodekeeper-controller"} {
			if !strings.Contains(goBuild, want) {
				t.Errorf("go build does not contain %q: %s", want, goBuild)
			}
		}
		for _, src := range copied {
			if _, err := os.Stat(repoPath(t, strings.TrimSuffix(src, "/"))); err != nil {
				t.Errorf("COPY %s: %v", src, err)
			}
		}
		// Every package of the module that the binary links must be inside a copied directory,
		// or the image build fails on a package this checkout has.
		trackInputs(t, "cmd", "internal", "go.mod")
		out, err := run(repoRoot(t), nil, "go", "list", "-e", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.ImportPath}}{{end}}{{end}}", "./cmd/nodekeeper-controller")
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range strings.Fields(string(out)) {
			rel := strings.TrimPrefix(strings.TrimPrefix(pkg, modulePath), "/") + "/"
			if !slices.ContainsFunc(copied, func(src string) bool { return strings.HasPrefix(rel, strings.TrimSuffix(src, "/")+"/") }) {
				t.Errorf("package %s is not copied into the builder (COPY sources %v)", pkg, copied)
			}
		}
	})

	t.Run("runtime", func(t *testing.T) {
		if !regexp.MustCompile(`^gcr\.io/distroless/static:nonroot(@sha256:[0-9a-f]{64})?$`).MatchString(final.image) {
			t.Errorf("runtime image %s, want gcr.io/distroless/static:nonroot", final.image)
		}
		var user, binary string
		var entrypoint []string
		for _, in := range final.insts {
			switch in.cmd {
			case "COPY":
				fields := strings.Fields(in.args)
				if len(fields) != 3 || fields[0] != "--from="+build.name || fields[1] != "/out/nodekeeper-controller" {
					t.Errorf("line %d: COPY %s, want only the binary from the %s stage", in.line, in.args, build.name)
					continue
				}
				binary = fields[2]
			case "USER":
				user = in.args
			case "ENTRYPOINT":
				if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
					t.Errorf("line %d: ENTRYPOINT %s is not the exec (JSON) form; the image has no shell", in.line, in.args)
				}
			case "LABEL", "ENV", "EXPOSE":
			default:
				t.Errorf("line %d: %s in the runtime stage; distroless has no shell to run it", in.line, in.cmd)
			}
		}
		if user != "65532:65532" && user != "65532" {
			t.Errorf("USER %q, want the numeric nonroot user 65532 (runAsNonRoot needs a numeric uid)", user)
		}
		if len(entrypoint) != 1 || entrypoint[0] != binary {
			t.Errorf("ENTRYPOINT %v, want [%s]", entrypoint, binary)
		}
		// The manifests run the image as the same user, so volumes and files line up.
		for _, r := range renderings[:3] {
			d := mustTyped[*appsv1.Deployment](t, ofKind(r.objs(t), "Deployment")[0])
			uid := d.Spec.Template.Spec.SecurityContext.RunAsUser
			if uid == nil || fmt.Sprint(*uid) != strings.Split(user, ":")[0] {
				t.Errorf("%s: pod runAsUser %s differs from the image's USER %s", r.name, ptrString(uid), user)
			}
		}
	})
}

// goDirectiveMinor returns "1.26" for a go.mod with `go 1.26.0`.
func goDirectiveMinor(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(readRepoFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

func ptrString[T any](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
