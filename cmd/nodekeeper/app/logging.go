package app

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // the json format
)

// loggingFlags is the --logging-format flag every command takes: what klog writes (the
// controller's log, doctor's and gc's warnings) as klog's text lines, the default, or as one JSON
// object per line (component-base's json format, as the Kubernetes components write it) for log
// pipelines that parse it.
type loggingFlags struct {
	config *logsapi.LoggingConfiguration
}

func newLoggingFlags() *loggingFlags {
	return &loggingFlags{config: logsapi.NewLoggingConfiguration()}
}

func (l *loggingFlags) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&l.config.Format, "logging-format", logsapi.DefaultLogFormat, "log format: text (klog's lines) or json (one JSON object per line)")
}

// Validate refuses an unknown format, naming the valid ones.
func (l *loggingFlags) Validate() error {
	if errs := logsapi.Validate(l.config, nil, field.NewPath("logging")); len(errs) > 0 {
		return fmt.Errorf("--logging-format %q: want text or json (%v)", l.config.Format, errs.ToAggregate())
	}
	return nil
}

// Apply installs the format, with the verbosity of -v and --vmodule, writing to stderr. Text
// is klog's own output and needs nothing; json replaces klog's logger for the whole process
// (component-base allows that once per process).
func (l *loggingFlags) Apply(f *pflag.FlagSet, stderr io.Writer) error {
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
