package cli

import (
	"flag"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // the json format
	"k8s.io/klog/v2"
)

// LoggingFlags is the --logging-format flag every command takes: what klog writes (the
// controller's log, doctor's and gc's warnings) as klog's text lines, the default, or as one JSON
// object per line (component-base's json format, as the Kubernetes components write it) for log
// pipelines that parse it.
type LoggingFlags struct {
	config *logsapi.LoggingConfiguration
}

// NewLoggingFlags returns the flags with the default format, text.
func NewLoggingFlags() *LoggingFlags {
	return &LoggingFlags{config: logsapi.NewLoggingConfiguration()}
}

// AddFlags registers --logging-format.
func (l *LoggingFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&l.config.Format, "logging-format", logsapi.DefaultLogFormat, "log format: text (klog's lines) or json (one JSON object per line)")
}

// Validate refuses an unknown format, naming the valid ones.
func (l *LoggingFlags) Validate() error {
	if errs := logsapi.Validate(l.config, nil, field.NewPath("logging")); len(errs) > 0 {
		return fmt.Errorf("--logging-format %q: want text or json (%v)", l.config.Format, errs.ToAggregate())
	}
	return nil
}

// Apply installs the format, with the verbosity of -v and --vmodule, writing to stderr. Text
// is klog's own output and needs nothing; json replaces klog's logger for the whole process
// (component-base allows that once per process).
func (l *LoggingFlags) Apply(f *pflag.FlagSet, stderr io.Writer) error {
	if l.config.Format == logsapi.DefaultLogFormat {
		return nil
	}
	if v := f.Lookup("v"); v != nil {
		if err := logsapi.VerbosityLevelPflag(&l.config.Verbosity).Set(v.Value.String()); err != nil {
			return err
		}
	}
	if vm := f.Lookup("vmodule"); vm != nil && vm.Value.String() != "" {
		if err := logsapi.VModuleConfigurationPflag(&l.config.VModule).Set(vm.Value.String()); err != nil {
			return err
		}
	}
	// Both streams on stderr: stdout carries only the commands' output.
	return logsapi.ValidateAndApplyWithOptions(l.config, &logsapi.LoggingOptions{ErrorStream: stderr, InfoStream: stderr}, nil)
}

// AddKlogFlags adds klog's -v and --vmodule to cmd and its subcommands.
func AddKlogFlags(cmd *cobra.Command) {
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	cmd.PersistentFlags().AddGoFlag(klogFlags.Lookup("v"))
	cmd.PersistentFlags().AddGoFlag(klogFlags.Lookup("vmodule"))
}

// SetupRoot gives a root command what every nodekeeper binary's root has: the streams, unknown
// flags and bad flag values as bad usage, no usage or error printing of cobra's own (Execute
// prints the one error line), -v, --vmodule and --logging-format applied before any command runs.
func SetupRoot(cmd *cobra.Command, in io.Reader, out, errOut io.Writer) {
	logging := NewLoggingFlags()
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := logging.Validate(); err != nil {
			return UsageError(err)
		}
		return logging.Apply(cmd.Flags(), errOut)
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError(err) })
	cmd.SetIn(in)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	AddKlogFlags(cmd)
	logging.AddFlags(cmd.PersistentFlags())
}
