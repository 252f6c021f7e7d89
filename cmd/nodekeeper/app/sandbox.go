package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nodekeeper/nodekeeper/internal/cli"
	"github.com/nodekeeper/nodekeeper/internal/controlplane"
	"github.com/nodekeeper/nodekeeper/internal/kube"
	"github.com/nodekeeper/nodekeeper/internal/sandbox"
)

// sandboxOptions are the settings of `nodekeeper sandbox`.
type sandboxOptions struct {
	g *globalOptions

	mix           sandbox.Mix
	kubeconfigOut string
	runFor        time.Duration
	verbose       bool
	force         bool
	keepAuditLog  string

	controlPlaneDir string
}

func newSandboxCommand(g *globalOptions) *cobra.Command {
	o := &sandboxOptions{g: g, mix: sandbox.DefaultMix()}
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local control plane with simulated EKS kubelets to try nodekeeper on",
		Long: `Starts etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 (from the release's
nodekeeper-controlplane archive unpacked beside this binary, --controlplane-dir, or a checkout's
'make controlplane') and simulated EKS kubelets: healthy ones, stopped machines, legacy (< 1.29)
and modern zombie kubelets whose Node was deleted, and leases leaked in the past. Writes an admin
kubeconfig, prints how to use it, and stops everything on Ctrl-C.`,
		Example: `  nodekeeper sandbox
  nodekeeper sandbox --healthy 200 --legacy-zombies 5 --leaked 1000
  nodekeeper leases -A --kubeconfig nodekeeper-sandbox.kubeconfig`,
		Args: cli.UsageArgs(cobra.NoArgs),
		RunE: cli.RunOptions(o),
	}
	o.AddFlags(cmd.Flags())
	return cmd
}

func (o *sandboxOptions) AddFlags(f *pflag.FlagSet) {
	mix := &o.mix
	f.IntVar(&mix.Healthy, "healthy", mix.Healthy, "healthy modern kubelets")
	f.IntVar(&mix.Stopped, "stopped", mix.Stopped, "machines that die, leaving a stale lease beside their Node")
	f.IntVar(&mix.LegacyZombies, "legacy-zombies", mix.LegacyZombies, "pre-1.29 kubelets whose Node is deleted: they re-create ownerless leases")
	f.IntVar(&mix.ModernZombies, "modern-zombies", mix.ModernZombies, "1.29+ kubelets whose Node is deleted: they keep GETting lease and Node")
	f.IntVar(&mix.Leaked, "leaked", mix.Leaked, "ownerless leases leaked in the past, with no Node and no kubelet")
	f.DurationVar(&mix.LeakedAge, "leaked-age", mix.LeakedAge, "how long ago the leaked leases were last renewed")
	f.Int32Var(&mix.LeaseDurationSeconds, "lease-duration", 40, "nodeLeaseDurationSeconds of every simulated kubelet")
	f.StringVar(&o.kubeconfigOut, "write-kubeconfig", "nodekeeper-sandbox.kubeconfig", "where to write the admin kubeconfig, created 0600 (removed on exit; an existing file is refused unless --force)")
	f.BoolVar(&o.force, "force", false, "replace an existing --write-kubeconfig file (atomically, at 0600; it is then left in place on exit)")
	f.BoolVar(&o.verbose, "kubelet-logs", false, "show the simulated kubelets' logs")
	f.DurationVar(&o.runFor, "for", 0, "stop by itself after this long (0: run until Ctrl-C)")
	f.StringVar(&o.keepAuditLog, "keep-audit-log", "", "copy the API server's audit log to this file when the sandbox stops (without it the log is deleted with everything else)")
	f.StringVar(&o.controlPlaneDir, "controlplane-dir", "", "directory holding etcd, kube-apiserver and kube-controller-manager "+
		"(default: controlplane/ beside this binary, where the release's control-plane archive unpacks, then $XDG_DATA_HOME/nodekeeper/controlplane, then bin/controlplane of a checkout)")
}

// Complete has nothing to do: the flags are the settings, and whether the local control plane
// can run here is a question for Run.
func (o *sandboxOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate refuses an existing --write-kubeconfig without --force before anything is started:
// finding out after the control plane came up costs a minute and leaves nothing to use.
// sandbox.WriteKubeconfigFile checks again when it writes (O_EXCL), for a file created meanwhile.
func (o *sandboxOptions) Validate() error {
	if o.kubeconfigOut == "" {
		return fmt.Errorf("--write-kubeconfig must name a file")
	}
	if o.force {
		return nil
	}
	if _, err := os.Lstat(o.kubeconfigOut); err == nil {
		return fmt.Errorf("--write-kubeconfig %s already exists: nodekeeper does not overwrite it (it may be your kubeconfig); "+
			"choose another path, or pass --force to replace it", o.kubeconfigOut)
	}
	return nil
}

// sandboxShutdownGrace is how long the sandbox may take to stop after the first signal.
const sandboxShutdownGrace = 30 * time.Second

// Run starts the sandbox, writes its kubeconfig and waits for ctx to end (or --for). A platform
// where the local control plane cannot run is a failed run (exit 1), not bad usage.
func (o *sandboxOptions) Run(ctx context.Context) error {
	if err := controlplane.Supported(); err != nil {
		return err
	}
	// On the first signal the sandbox stops its simulated kubelets and its control plane (each
	// component SIGTERM, then SIGKILL) and removes its directory: give that time before the
	// run is abandoned (the components, started with a parent-death signal, die with it then).
	cli.SetShutdownGrace(ctx, sandboxShutdownGrace)
	out := o.g.streams.ErrOut
	sb, err := sandbox.Start(ctx, o.mix, sandbox.Options{
		ControlPlaneDir: o.controlPlaneDir,
		Quiet:           !o.verbose,
		Progress:        func(line string) { fmt.Fprintln(out, "sandbox:", line) },
		UserAgent:       kube.UserAgent("sandbox"),
	})
	if err != nil {
		return err
	}
	defer sb.Stop()
	data, err := sb.Env.Kubeconfig(sb.Env.AdminConfig())
	if err != nil {
		return err
	}
	// Written last: scripts wait for this file to know the sandbox is ready. Created 0600 with
	// O_EXCL; an existing file only with --force; removed on exit only if this run created it
	// (see sandbox.KubeconfigFile).
	kf, err := sandbox.WriteKubeconfigFile(o.kubeconfigOut, data, o.force)
	if err != nil {
		return err
	}
	defer func() {
		if msg, err := kf.Cleanup(); err != nil {
			fmt.Fprintln(out, "sandbox: removing the kubeconfig:", err)
		} else if msg != "" {
			fmt.Fprintln(out, "sandbox:", msg)
		}
	}()
	auditLog := sb.Env.AuditLogPath()
	if o.keepAuditLog != "" {
		defer func() {
			if err := copyFile(auditLog, o.keepAuditLog); err != nil {
				fmt.Fprintln(out, "sandbox: keeping the audit log:", err)
			} else {
				fmt.Fprintln(out, "sandbox: audit log kept as", o.keepAuditLog)
			}
		}()
	}
	self := invokedAs()
	fmt.Fprintf(o.g.streams.Out, `
The sandbox is running. Point kubectl and nodekeeper at it:

  export KUBECONFIG=%[1]s
  kubectl get nodes
  %[2]s leases -A
  %[2]s doctor
  %[2]s gc --dry-run
  %[2]s audit %[3]s
%[4]s
Press Ctrl-C to stop it (everything it started is removed).
`, kf.Path, self, auditLog, auditLogFate(auditLog, o.keepAuditLog))
	if o.runFor > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(o.runFor):
		}
	} else {
		<-ctx.Done()
	}
	fmt.Fprintln(out, "sandbox: stopping")
	return nil
}

// auditLogFate says what becomes of the audit log the hints name when the sandbox stops.
func auditLogFate(path, keep string) string {
	if keep != "" {
		return fmt.Sprintf("  (the audit log is copied to %s when the sandbox stops)\n", keep)
	}
	return "  (the audit log is deleted when the sandbox stops; --keep-audit-log FILE keeps a copy)\n"
}

// invokedAs is how the user ran this binary, for hints they can paste: "bin/nodekeeper" when
// started by a path (make sandbox, make run), the bare name when found on PATH.
func invokedAs() string {
	arg0 := os.Args[0]
	if strings.ContainsRune(arg0, filepath.Separator) {
		return arg0
	}
	return filepath.Base(arg0)
}

// copyFile copies src to dst (created 0600: an audit log holds every request's user).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
