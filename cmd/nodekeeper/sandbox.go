package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/sandbox"
)

func init() { rootCmd.AddCommand(newSandboxCmd()) }

func newSandboxCmd() *cobra.Command {
	mix := sandbox.DefaultMix()
	var kubeconfigOut string
	var runFor time.Duration
	var verbose bool
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Run a local control plane with simulated EKS kubelets to try nodekeeper on",
		Long: `Starts etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 (built from Go modules
by 'make controlplane') and simulated EKS kubelets: healthy ones, stopped machines, legacy (< 1.29)
and modern zombie kubelets whose Node was deleted, and leases leaked in the past. Writes an admin
kubeconfig, prints how to use it, and stops everything on Ctrl-C.`,
		Example: `  nodekeeper sandbox
  nodekeeper sandbox --healthy 200 --legacy-zombies 5 --leaked 1000
  nodekeeper leases -A --kubeconfig nodekeeper-sandbox.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			out := cmd.ErrOrStderr()
			sb, err := sandbox.Start(ctx, mix, !verbose, func(line string) { fmt.Fprintln(out, "sandbox:", line) })
			if err != nil {
				return err
			}
			defer sb.Stop()
			path, err := filepath.Abs(kubeconfigOut)
			if err != nil {
				return err
			}
			// Written last: scripts wait for this file to know the sandbox is ready.
			if err := sb.Env.WriteKubeconfig(path, sb.Env.AdminConfig()); err != nil {
				return fmt.Errorf("write kubeconfig: %w", err)
			}
			defer os.Remove(path)
			fmt.Fprintf(cmd.OutOrStdout(), `
The sandbox is running. Point kubectl and nodekeeper at it:

  export KUBECONFIG=%s
  kubectl get nodes
  nodekeeper leases -A
  nodekeeper gc --dry-run
  nodekeeper audit %s

Press Ctrl-C to stop it (everything it started is removed).
`, path, sb.Env.AuditLogPath())
			if runFor > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(runFor):
				}
			} else {
				<-ctx.Done()
			}
			fmt.Fprintln(out, "sandbox: stopping")
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&mix.Healthy, "healthy", mix.Healthy, "healthy modern kubelets")
	f.IntVar(&mix.Stopped, "stopped", mix.Stopped, "machines that die, leaving a stale lease beside their Node")
	f.IntVar(&mix.LegacyZombies, "legacy-zombies", mix.LegacyZombies, "pre-1.29 kubelets whose Node is deleted: they re-create ownerless leases")
	f.IntVar(&mix.ModernZombies, "modern-zombies", mix.ModernZombies, "1.29+ kubelets whose Node is deleted: they keep GETting lease and Node")
	f.IntVar(&mix.Leaked, "leaked", mix.Leaked, "ownerless leases leaked in the past, with no Node and no kubelet")
	f.DurationVar(&mix.LeakedAge, "leaked-age", mix.LeakedAge, "how long ago the leaked leases were last renewed")
	f.Int32Var(&mix.LeaseDurationSeconds, "lease-duration", 40, "nodeLeaseDurationSeconds of every simulated kubelet")
	f.StringVar(&kubeconfigOut, "write-kubeconfig", "nodekeeper-sandbox.kubeconfig", "where to write the admin kubeconfig (removed on exit)")
	f.BoolVar(&verbose, "kubelet-logs", false, "show the simulated kubelets' logs")
	f.DurationVar(&runFor, "for", 0, "stop by itself after this long (0: run until Ctrl-C)")
	return cmd
}
