package deploytest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The release configuration is checked here by structure, cheaply: building GoReleaser and the six
// cross-builds is `make release-check`'s job (tools/release/releasecheck), not `make test`'s.

// goreleaserConfig is the part of .goreleaser.yaml the release's promises depend on.
type goreleaserConfig struct {
	Version     int               `json:"version"`
	ProjectName string            `json:"project_name"`
	Env         []string          `json:"env"`
	Builds      []goreleaserBuild `json:"builds"`
	Archives    []struct {
		ID              string   `json:"id"`
		IDs             []string `json:"ids"`
		WrapInDirectory string   `json:"wrap_in_directory"`
		NameTemplate    string   `json:"name_template"`
		Formats         []string `json:"formats"`
		FormatOverrides []struct {
			Goos    string   `json:"goos"`
			Formats []string `json:"formats"`
		} `json:"format_overrides"`
		Files []json.RawMessage `json:"files"`
	} `json:"archives"`
	Checksum struct {
		Algorithm string `json:"algorithm"`
	} `json:"checksum"`
	SBOMs []struct {
		Artifacts string   `json:"artifacts"`
		IDs       []string `json:"ids"`
		Cmd       string   `json:"cmd"`
	} `json:"sboms"`
	Signs []struct {
		ID        string   `json:"id"`
		Cmd       string   `json:"cmd"`
		Artifacts string   `json:"artifacts"`
		Signature string   `json:"signature"`
		Args      []string `json:"args"`
		Output    bool     `json:"output"`
	} `json:"signs"`
	DockersV2 []struct {
		IDs        []string `json:"ids"`
		Dockerfile string   `json:"dockerfile"`
		Images     []string `json:"images"`
		Tags       []string `json:"tags"`
		Platforms  []string `json:"platforms"`
	} `json:"dockers_v2"`
}

// goreleaserBuild is one entry of builds:.
type goreleaserBuild struct {
	ID      string   `json:"id"`
	Dir     string   `json:"dir"`
	Main    string   `json:"main"`
	Binary  string   `json:"binary"`
	Env     []string `json:"env"`
	Flags   []string `json:"flags"`
	Ldflags []string `json:"ldflags"`
	Goos    []string `json:"goos"`
	Goarch  []string `json:"goarch"`
}

// controlPlaneBuilds are the builds of the sandbox's control-plane archive.
var controlPlaneBuilds = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

func loadGoreleaser(t *testing.T) goreleaserConfig {
	t.Helper()
	var c goreleaserConfig
	if err := yaml.Unmarshal(readRepoFile(t, ".goreleaser.yaml"), &c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	var builds []string
	for _, b := range c.Builds {
		builds = append(builds, b.ID)
	}
	wantBuilds := append([]string{"nodekeeper", "nodekeeper-controller"}, controlPlaneBuilds...)
	if c.Version != 2 || !slices.Equal(builds, wantBuilds) || len(c.Archives) != 2 || c.Archives[0].ID != "nodekeeper" || c.Archives[1].ID != "controlplane" {
		t.Fatalf(".goreleaser.yaml: version %d with builds %v and %d archives, want version 2 with builds %v and the archives nodekeeper and controlplane",
			c.Version, builds, len(c.Archives), wantBuilds)
	}
	return c
}

func (c goreleaserConfig) build(id string) goreleaserBuild {
	for _, b := range c.Builds {
		if b.ID == id {
			return b
		}
	}
	return goreleaserBuild{}
}

// GoReleaser builds the CLI for six platforms and the controller for Linux the way `make build`
// builds them for this one: no cgo, -trimpath, and the very same ldflags into internal/buildinfo,
// with the version from the Makefile.
func TestGoreleaserBuildMatchesMakefile(t *testing.T) {
	c := loadGoreleaser(t)
	const version, commit, date = "v1.2.3", "0123456789abcdef0123456789abcdef01234567", "2030-01-02T03:04:05Z"
	plan := makeDryRun(t, "build", "VERSION="+version, "COMMIT="+commit, "BUILD_DATE="+date)
	for _, tc := range []struct {
		id, main string
		goos     []string
	}{
		{"nodekeeper", "./cmd/nodekeeper", []string{"linux", "darwin", "windows"}},
		{"nodekeeper-controller", "./cmd/nodekeeper-controller", []string{"linux"}},
	} {
		b := c.build(tc.id)
		if b.Main != tc.main || b.Binary != tc.id {
			t.Errorf("build %s: main %q binary %q, want %s and %s", tc.id, b.Main, b.Binary, tc.main, tc.id)
		}
		if !slices.Equal(b.Goos, tc.goos) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) {
			t.Errorf("build %s: targets %v × %v, want %v × amd64, arm64", tc.id, b.Goos, b.Goarch, tc.goos)
		}
		if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
			t.Errorf("build %s: env %v flags %v, want CGO_ENABLED=0 and -trimpath", tc.id, b.Env, b.Flags)
		}
		// What `make build` would pass for a given version, commit and date ...
		m := regexp.MustCompile(`go build .*-ldflags "([^"]*)" -o bin/` + regexp.QuoteMeta(tc.id) + ` ` + regexp.QuoteMeta(tc.main) + `\n`).FindStringSubmatch(plan)
		if m == nil {
			t.Fatalf("make -n build does not build bin/%s from %s with -ldflags:\n%s", tc.id, tc.main, plan)
		}
		// ... and what GoReleaser passes when the Makefile gives it the same in the environment.
		env := map[string]string{"VERSION": version, "COMMIT": commit, "BUILD_DATE": date}
		got := expandEnvTemplates(strings.Join(b.Ldflags, " "), env)
		if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(m[1]), " ") {
			t.Errorf("build %s: ldflags differ:\n goreleaser: %s\n Makefile:   %s", tc.id, got, m[1])
		}
	}
	// The environment variables default to the git tag when GoReleaser runs outside make.
	for _, name := range []string{"VERSION", "COMMIT", "BUILD_DATE"} {
		if !slices.ContainsFunc(c.Env, func(e string) bool { return strings.HasPrefix(e, name+`={{ envOrDefault "`+name+`" `) }) {
			t.Errorf("env has no %s={{ envOrDefault \"%s\" ... }} fallback: %v", name, name, c.Env)
		}
	}
}

// expandEnvTemplates replaces GoReleaser's {{ .Env.NAME }} with the given values.
func expandEnvTemplates(s string, env map[string]string) string {
	return regexp.MustCompile(`\{\{\s*\.Env\.(\w+)\s*\}\}`).ReplaceAllStringFunc(s, func(m string) string {
		name := regexp.MustCompile(`\.Env\.(\w+)`).FindStringSubmatch(m)[1]
		return env[name]
	})
}

// The archives are the ones the krew manifest downloads: same names, tar.gz but zip on Windows,
// with the files the manifest installs; every platform of the build has a krew platform.
func TestGoreleaserArchivesMatchKrew(t *testing.T) {
	c := loadGoreleaser(t)
	a := c.Archives[0]
	env := map[string]string{"VERSION": "v1.2.3"}
	krew := string(readRepoFile(t, "deploy/krew/nodekeeper.yaml"))
	uris := regexp.MustCompile(`addURIAndSha "([^"]+)"`).FindAllStringSubmatch(krew, -1)
	var krewArchives []string
	for _, u := range uris {
		krewArchives = append(krewArchives, path.Base(strings.ReplaceAll(u[1], "{{ .TagName }}", "v1.2.3")))
	}
	var built []string
	if !slices.Equal(a.IDs, []string{"nodekeeper"}) {
		t.Errorf("the CLI's archives hold the builds %v, want only nodekeeper (the controller ships as the image)", a.IDs)
	}
	for _, goos := range c.build("nodekeeper").Goos {
		for _, goarch := range c.build("nodekeeper").Goarch {
			name := expandEnvTemplates(a.NameTemplate, env)
			name = strings.NewReplacer("{{ .ProjectName }}", c.ProjectName, "{{ .Os }}", goos, "{{ .Arch }}", goarch).Replace(name)
			format := a.Formats
			for _, o := range a.FormatOverrides {
				if o.Goos == goos {
					format = o.Formats
				}
			}
			if len(format) != 1 {
				t.Fatalf("%s: formats %v, want one", goos, format)
			}
			built = append(built, name+"."+format[0])
		}
	}
	slices.Sort(built)
	slices.Sort(krewArchives)
	if !slices.Equal(built, krewArchives) {
		t.Errorf("GoReleaser makes %v\nthe krew manifest downloads %v", built, krewArchives)
	}
	var files []string
	for _, f := range a.Files {
		var s string
		if json.Unmarshal(f, &s) == nil {
			files = append(files, s)
			continue
		}
		var obj struct {
			Src         string `json:"src"`
			StripParent bool   `json:"strip_parent"`
		}
		if err := json.Unmarshal(f, &obj); err != nil {
			t.Fatalf("archive file %s: %v", f, err)
		}
		if !obj.StripParent {
			t.Errorf("archive file %s keeps its directory; krew expects it at the archive's top", obj.Src)
		}
		files = append(files, obj.Src)
	}
	for _, want := range []string{"LICENSE", "deploy/krew/kubectl_complete-nodekeeper"} {
		if !slices.Contains(files, want) {
			t.Errorf("archives hold %v, not %s (the krew manifest installs it)", files, want)
		}
	}
	for _, f := range files {
		if _, err := os.Stat(repoPath(t, f)); err != nil {
			t.Errorf("archive file %s: %v", f, err)
		}
	}
	if c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum algorithm %q, want sha256 (krew's)", c.Checksum.Algorithm)
	}
	if len(c.SBOMs) != 1 || c.SBOMs[0].Cmd != "cyclonedx-gomod" || c.SBOMs[0].Artifacts != "binary" ||
		!slices.Equal(c.SBOMs[0].IDs, []string{"nodekeeper", "nodekeeper-controller"}) {
		t.Errorf("sboms %+v, want cyclonedx-gomod over nodekeeper's own binaries", c.SBOMs)
	}
	if !strings.Contains(string(readRepoFile(t, "tools/release/go.mod")), "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod") {
		t.Error("tools/release/go.mod does not pin cyclonedx-gomod as a tool; the SBOM step would need a binary from elsewhere")
	}
}

// The release carries the sandbox's control plane for Linux: the three binaries built from the
// pinned tools/controlplane module with the version stamp a checkout's bin/controlplane gets, in
// an archive that unpacks to controlplane/, where `nodekeeper sandbox` looks beside its binary.
// make release-check starts the sandbox from the unpacked archives (tools/release/releasecheck).
func TestGoreleaserControlPlaneArchive(t *testing.T) {
	c := loadGoreleaser(t)
	for _, id := range controlPlaneBuilds {
		b := c.build(id)
		if b.Dir != "tools/controlplane" || b.Main != "./"+id || b.Binary != id {
			t.Errorf("build %s: dir %q main %q binary %q, want tools/controlplane, ./%s, %s", id, b.Dir, b.Main, b.Binary, id, id)
		}
		if _, err := os.Stat(repoPath(t, path.Join("tools/controlplane", id, "main.go"))); err != nil {
			t.Errorf("build %s: %v", id, err)
		}
		if !slices.Equal(b.Goos, []string{"linux"}) || !slices.Equal(b.Goarch, []string{"amd64", "arm64"}) {
			t.Errorf("build %s: targets %v × %v, want linux × amd64, arm64 (the sandbox runs on Linux only)", id, b.Goos, b.Goarch)
		}
		if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") || !slices.Equal(b.Ldflags, []string{"{{ .Env.CONTROLPLANE_LDFLAGS }}"}) {
			t.Errorf("build %s: env %v flags %v ldflags %v, want CGO_ENABLED=0, -trimpath and the CONTROLPLANE_LDFLAGS stamp", id, b.Env, b.Flags, b.Ldflags)
		}
	}
	a := c.Archives[1]
	if !slices.Equal(a.IDs, controlPlaneBuilds) || a.WrapInDirectory != "controlplane" || !slices.Equal(a.Formats, []string{"tar.gz"}) {
		t.Errorf("control-plane archive: builds %v in %q as %v, want %v in controlplane/ as tar.gz", a.IDs, a.WrapInDirectory, a.Formats, controlPlaneBuilds)
	}
	if a.NameTemplate != "{{ .ProjectName }}-controlplane_{{ .Env.VERSION }}_{{ .Os }}_{{ .Arch }}" {
		t.Errorf("control-plane archive name %q", a.NameTemplate)
	}
	// The stamp is the one hack/build-controlplane.sh builds a checkout's control plane with.
	plan := makeDryRun(t, "release-snapshot", "VERSION=v1.2.3")
	if !strings.Contains(plan, `CONTROLPLANE_LDFLAGS="$(bash hack/controlplane-ldflags.sh)"`) {
		t.Errorf("make release-snapshot does not give GoReleaser hack/controlplane-ldflags.sh's stamp:\n%s", plan)
	}
	if !strings.Contains(string(readRepoFile(t, "hack/build-controlplane.sh")), `ldflags=$(bash "$root/hack/controlplane-ldflags.sh")`) {
		t.Error("hack/build-controlplane.sh does not stamp with hack/controlplane-ldflags.sh")
	}
}

// The image GoReleaser would build is the multi-arch distroless one, from Dockerfile.release, with
// the same runtime as the Dockerfile; `make release-snapshot` skips it (no Docker engine needed).
func TestGoreleaserImage(t *testing.T) {
	c := loadGoreleaser(t)
	if len(c.DockersV2) != 1 {
		t.Fatalf("%d dockers_v2 entries, want 1", len(c.DockersV2))
	}
	d := c.DockersV2[0]
	if !slices.Equal(d.IDs, []string{"nodekeeper-controller"}) {
		t.Errorf("the image is built from %v, want the controller's binary alone (nodekeeper-controller)", d.IDs)
	}
	if !slices.Equal(d.Platforms, []string{"linux/amd64", "linux/arm64"}) || !slices.Equal(d.Images, []string{"ghcr.io/nodekeeper/nodekeeper"}) {
		t.Errorf("image %v for %v, want ghcr.io/nodekeeper/nodekeeper for linux/amd64 and linux/arm64", d.Images, d.Platforms)
	}
	// The chart's default image tag is "v" + appVersion = VERSION, so the release tags VERSION.
	if !slices.Equal(d.Tags, []string{"{{ .Env.VERSION }}"}) {
		t.Errorf("image tags %v, want [{{ .Env.VERSION }}], the tag the chart defaults to", d.Tags)
	}
	_, stages, err := parseDockerfile(string(readRepoFile(t, d.Dockerfile)))
	if err != nil {
		t.Fatalf("%s: %v", d.Dockerfile, err)
	}
	_, sourceStages, err := parseDockerfile(string(readRepoFile(t, "Dockerfile")))
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 1 {
		t.Fatalf("%s has %d stages, want 1 (GoReleaser has built the binaries)", d.Dockerfile, len(stages))
	}
	runtimeOf := func(st *dockerStage) (user, entrypoint, binary string) {
		for _, in := range st.insts {
			switch in.cmd {
			case "USER":
				user = in.args
			case "ENTRYPOINT":
				entrypoint = in.args
			case "COPY":
				f := strings.Fields(in.args)
				binary = f[len(f)-1]
			}
		}
		return
	}
	gotUser, gotEntry, gotBinary := runtimeOf(stages[0])
	wantUser, wantEntry, wantBinary := runtimeOf(sourceStages[len(sourceStages)-1])
	if stages[0].image != sourceStages[len(sourceStages)-1].image || !reflect.DeepEqual(
		[3]string{gotUser, gotEntry, gotBinary}, [3]string{wantUser, wantEntry, wantBinary}) {
		t.Errorf("%s runs %s as %q with %s at %s; the Dockerfile runs %s as %q with %s at %s", d.Dockerfile,
			stages[0].image, gotUser, gotEntry, gotBinary, sourceStages[len(sourceStages)-1].image, wantUser, wantEntry, wantBinary)
	}
	for _, in := range stages[0].insts {
		switch in.cmd {
		case "COPY":
			if in.args != "$TARGETPLATFORM/nodekeeper-controller /nodekeeper-controller" {
				t.Errorf("line %d: COPY %s, want the controller's binary of the target platform ($TARGETPLATFORM/nodekeeper-controller)", in.line, in.args)
			}
		case "ARG", "USER", "ENTRYPOINT", "LABEL":
		default:
			t.Errorf("line %d: %s; distroless has no shell to run it", in.line, in.cmd)
		}
	}
	if plan := makeDryRun(t, "release-snapshot", "VERSION=v1.2.3"); !regexp.MustCompile(`goreleaser release --snapshot --clean --skip=\S*docker`).MatchString(plan) {
		t.Errorf("make release-snapshot does not skip the image (no Docker engine):\n%s", plan)
	}
}

// The README's install lines work, and promise nothing that is not published. Its first lines
// are the two commands scripts depend on (make run, make test). The install commands it gives
// for a checkout run for real: `go install ./cmd/nodekeeper` into a temporary GOBIN, whose binary
// must print its version; each `make TARGET` is a Makefile target, and every bin/ file its line
// says it produces is in `make -n TARGET`. Release artefacts (archives, krew, chart, image) are
// named only under "What a release will ship", with the names the repository really uses, and
// no line promises @latest or a fixed version that `git tag` does not have.
func TestReadmeInstallLines(t *testing.T) {
	trackInputs(t, "README.md", "Makefile", "go.mod", "go.sum", "cmd", "internal")
	readme := string(readRepoFile(t, "README.md"))
	root := repoRoot(t)
	module := regexp.MustCompile(`(?m)^module (\S+)$`).FindStringSubmatch(string(readRepoFile(t, "go.mod")))
	if module == nil {
		t.Fatal("go.mod has no module line")
	}
	for _, want := range []string{"make run ", "make test "} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not say %q", want)
		}
	}

	// The Install section, up to the release's own part.
	_, install, ok := strings.Cut(readme, "\n## Install\n")
	if !ok {
		t.Fatal("README.md has no ## Install section")
	}
	install, _, _ = strings.Cut(install, "\n## ")
	today, release, ok := strings.Cut(install, "\n### What a release will ship\n")
	if !ok {
		t.Error(`README.md's Install section has no "### What a release will ship" part`)
	}
	for _, re := range []string{`krew install`, `ghcr\.io/`, `\.tar\.gz`, `\.tgz`, `helm install`, `docker run`, `/releases\b`} {
		if loc := regexp.MustCompile(re).FindStringIndex(today); loc != nil {
			t.Errorf("README.md offers a release artefact (%s) among the install paths that work today: %q", re, lineAt(today, loc[0]))
		}
	}

	// No promise of what is not tagged, anywhere a reader installs from.
	tagsOut, err := run(root, nil, "git", "tag", "--list")
	if err != nil {
		t.Fatalf("git tag: %v", err)
	}
	tags := strings.Fields(string(tagsOut))
	versioned := regexp.MustCompile(`(?:@|nodekeeper[_:-]v?|:v)(\d+\.\d+\.\d+)\b`)
	for _, doc := range []string{"README.md", "docs/install.md", chartDir + "/README.md"} {
		text := string(readRepoFile(t, doc))
		if len(tags) == 0 {
			if loc := regexp.MustCompile(`@latest\b`).FindStringIndex(text); loc != nil {
				t.Errorf("%s promises @latest, but the repository has no tag: %q", doc, lineAt(text, loc[0]))
			}
		}
		for _, m := range versioned.FindAllStringSubmatchIndex(text, -1) {
			v := text[m[2]:m[3]]
			if !slices.Contains(tags, "v"+v) && !slices.Contains(tags, v) {
				t.Errorf("%s names version %s, which git tag does not have: %q", doc, v, lineAt(text, m[0]))
			}
		}
	}

	// The release part names the artefacts as the release configuration makes them.
	krewName := regexp.MustCompile(`(?m)^metadata:\n  name: (\S+)$`).FindSubmatch(readRepoFile(t, "deploy/krew/nodekeeper.yaml"))
	if krewName == nil {
		t.Fatal("deploy/krew/nodekeeper.yaml has no metadata.name")
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
		} `json:"image"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, chartDir+"/values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kubectl krew install " + string(krewName[1]),
		values.Image.Repository + ":<version>",
		"nodekeeper_<version>_<os>_<arch>.tar.gz",
		"nodekeeper-<version>.tgz",
		"make release-snapshot",
	} {
		if !strings.Contains(release, want) {
			t.Errorf("README.md's release part does not say %q", want)
		}
	}

	// The commands that work today, run.
	makefile := string(readRepoFile(t, "Makefile"))
	var commands int
	for _, line := range strings.Split(today, "\n") {
		cmd, comment, _ := strings.Cut(line, "#")
		f := strings.Fields(cmd)
		switch {
		case len(f) == 2 && f[0] == "make":
			commands++
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(f[1]) + `:`).MatchString(makefile) {
				t.Errorf("README.md runs make %s, which the Makefile does not define", f[1])
				continue
			}
			plan := makeDryRun(t, f[1])
			for _, out := range regexp.MustCompile(`\bbin/[\w.-]+`).FindAllString(comment, -1) {
				if !regexp.MustCompile(`(^|[\s/])` + regexp.QuoteMeta(out) + `(\s|$)`).MatchString(plan) {
					t.Errorf("README.md says make %s produces %s; make -n %s does not:\n%s", f[1], out, f[1], plan)
				}
			}
		case len(f) >= 3 && f[0] == "go" && f[1] == "install":
			commands++
			pkg := f[len(f)-1]
			if !strings.HasPrefix(pkg, "./") {
				t.Errorf("README.md's go install %s is not a package of the checkout", pkg)
				continue
			}
			gobin := t.TempDir()
			goCmd := exec.Command("go", f[1:]...)
			goCmd.Dir = root
			goCmd.Env = append(withoutEnv(os.Environ(), "GOBIN", "GOOS", "GOARCH"), "GOBIN="+gobin)
			if out, err := goCmd.CombinedOutput(); err != nil {
				t.Errorf("README.md's %q fails: %v\n%s", strings.TrimSpace(cmd), err, out)
				continue
			}
			bin := filepath.Join(gobin, path.Base(pkg))
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil || !strings.Contains(string(out), "nodekeeper") {
				t.Errorf("%s version (installed by README.md's %q): %v\n%s", bin, strings.TrimSpace(cmd), err, out)
			}
		}
	}
	if commands < 2 {
		t.Errorf("README.md's Install section gives %d commands that work from a checkout, want make build and go install", commands)
	}
}

// lineAt is the line of text around offset i.
func lineAt(text string, i int) string {
	start := strings.LastIndex(text[:i], "\n") + 1
	end := strings.Index(text[i:], "\n")
	if end < 0 {
		return strings.TrimSpace(text[start:])
	}
	return strings.TrimSpace(text[start : i+end])
}

// TestControlPlaneStampSetsCommit: the control plane is built from the k8s.io/kubernetes module,
// which knows no git commit. Unstamped, client-go's and component-base's gitCommit keep their
// placeholder "$Format:%H$", and every request of kube-controller-manager carries the user agent
// "kubernetes/$Format" into the sandbox's audit log and nodekeeper audit's talkers; the stamp sets
// both empty, so the agent says "kubernetes/unknown".
func TestControlPlaneStampSetsCommit(t *testing.T) {
	trackInputs(t, "hack/controlplane-ldflags.sh")
	cmd := exec.Command("bash", "hack/controlplane-ldflags.sh")
	cmd.Dir = repoRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/controlplane-ldflags.sh: %v", err)
	}
	fields := strings.Fields(string(out))
	for _, pkg := range []string{"k8s.io/component-base/version", "k8s.io/client-go/pkg/version"} {
		if !slices.Contains(fields, pkg+".gitCommit=") {
			t.Errorf("the control-plane stamp leaves %s.gitCommit unset (user agent kubernetes/$Format): %s", pkg, out)
		}
	}
}

// TestReleaseSigning (issue 31 item 8): the release signs its checksums file with cosign's
// keyless flow into one Sigstore bundle beside it, the configuration GoReleaser's signing
// documentation gives for cosign: sign-blob, --bundle=${signature}, the artifact, --yes (no
// prompt in CI); `make release-snapshot`, which has neither the network nor an OIDC identity,
// skips it. cosign itself cannot run here; this is what can be checked of it.
func TestReleaseSigning(t *testing.T) {
	c := loadGoreleaser(t)
	if len(c.Signs) != 1 {
		t.Fatalf("%d signs entries, want 1 (the checksums file)", len(c.Signs))
	}
	s := c.Signs[0]
	if s.Cmd != "cosign" || s.Artifacts != "checksum" || !s.Output {
		t.Errorf("signs: cmd %q on %q (output %v), want cosign on checksum with its output shown", s.Cmd, s.Artifacts, s.Output)
	}
	if s.Signature != "${artifact}.sigstore.json" {
		t.Errorf("signature %q, want ${artifact}.sigstore.json (a Sigstore bundle)", s.Signature)
	}
	if want := []string{"sign-blob", "--bundle=${signature}", "${artifact}", "--yes"}; !slices.Equal(s.Args, want) {
		t.Errorf("cosign args %q, want %q (keyless: no --key)", s.Args, want)
	}
	for _, a := range s.Args {
		if strings.HasPrefix(a, "--key") {
			t.Errorf("cosign %s: the release signs keyless, with no key to keep", a)
		}
	}
	if c.Checksum.Algorithm != "sha256" {
		t.Errorf("checksum algorithm %q, want sha256 (what attest-build-provenance's subject-checksums reads)", c.Checksum.Algorithm)
	}
	if plan := makeDryRun(t, "release-snapshot", "VERSION=v1.2.3"); !regexp.MustCompile(`goreleaser release --snapshot --clean --skip=\S*\bsign\b`).MatchString(plan) {
		t.Errorf("make release-snapshot does not skip signing (no network, no OIDC identity):\n%s", plan)
	}
	if plan := makeDryRun(t, "vulncheck"); !regexp.MustCompile(`go run golang.org/x/vuln/cmd/govulncheck@v\d+\.\d+\.\d+ \./\.\.\.`).MatchString(plan) {
		t.Errorf("make vulncheck does not run a pinned govulncheck over ./...:\n%s", plan)
	}
}

// TestBaseImagesPinned (issue 31 item 8): every FROM of the Dockerfiles names its image by
// digest, with the tag it was taken from in a comment above it.
func TestBaseImagesPinned(t *testing.T) {
	for _, name := range []string{"Dockerfile", "Dockerfile.release"} {
		src := string(readRepoFile(t, name))
		_, stages, err := parseDockerfile(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, st := range stages {
			image, digest, ok := strings.Cut(st.image, "@")
			if !ok || !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
				t.Errorf("%s: FROM %s is not pinned by digest", name, st.image)
				continue
			}
			if !strings.Contains(src, "# "+image+"\n") {
				t.Errorf("%s: no comment names the tag %s of the pinned %s", name, image, st.image)
			}
		}
	}
}
