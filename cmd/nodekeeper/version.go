package main

import (
	"github.com/spf13/cobra"

	"github.com/nodekeeper/nodekeeper/internal/buildinfo"
)

// version is the short version for user agents; the full record is buildinfo.Get().
var version = buildinfo.Get().Version

func init() {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the nodekeeper version, commit, build date, Go version and platform",
		Example: `  nodekeeper version
  nodekeeper version -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return buildinfo.Print(cmd.OutOrStdout(), buildinfo.Get(), output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(buildinfo.Formats, cobra.ShellCompDirectiveNoFileComp))
	rootCmd.AddCommand(cmd)
}
