package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/eval"
	"github.com/patrold/patrold/model"
)

// annotationRunnableGroup marks a command group that runs by itself
// without a subcommand.
const annotationRunnableGroup = "runnable_group"

// ErrNotQualified is returned (exit 1) when the model misses a bar.
var ErrNotQualified = errors.New("the model does not qualify")

func newEvalCmd(a *app) *cobra.Command {
	var dir, output, reference string
	var repeat int
	bars := eval.DefaultBars()
	cmd := &cobra.Command{
		Use:         "eval",
		Short:       "Qualify the configured model over the scenario corpus (exit 1 when it misses a bar)",
		Annotations: map[string]string{annotationRunnableGroup: "true"},
		Args: func(cmd *cobra.Command, argv []string) error {
			if len(argv) > 0 {
				return usage(fmt.Errorf("unknown command %q for %q (see %s --help)", argv[0], cmd.CommandPath(), cmd.CommandPath()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := bars.Validate(); err != nil {
				return usage(err)
			}
			if repeat < 1 || repeat > 100 {
				return usage(fmt.Errorf("--repeat: %d is outside 1..100", repeat))
			}
			scs, err := loadScenarios(dir)
			if err != nil {
				return usage(err)
			}
			root, err := a.newRoot()
			if err != nil {
				return err
			}
			defer root.Close()
			em := root.EvalModel()
			o := eval.Options{Scenarios: scs, OpenStore: evalStore(em), Repeat: repeat, Analyst: em.Analyst, Bars: bars,
				ProviderName: em.Provider, ModelName: em.Model, ContextTokens: em.ContextTokens}
			switch {
			case reference != "":
				if _, err := eval.Reference(reference, scs[0]); err != nil {
					return usage(fmt.Errorf("--reference: %w", err))
				}
				o.ProviderName, o.ModelName = "script", "reference:"+reference
				o.Provider = func(sc *eval.Scenario) (model.Provider, error) { return eval.Reference(reference, sc) }
			case em.New == nil:
				return usage(errors.New("model.provider is none: there is no model to qualify (configure one, or use --reference perfect|lazy|noisy)"))
			default:
				if o.ModelName == "" {
					o.ModelName = em.Provider
				}
				o.Provider = func(*eval.Scenario) (model.Provider, error) { return em.New() }
			}
			res, err := eval.Run(cmd.Context(), o)
			if err != nil {
				return cliErr(err)
			}
			if output == "json" {
				err = a.printJSON(res)
			} else {
				err = eval.WriteText(a.stdout, res)
			}
			if err != nil {
				return err
			}
			if !res.Qualification.Passed {
				return fmt.Errorf("%w: %s", ErrNotQualified, strings.Join(res.Qualification.Failures, "; "))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "scenarios", "", "directory of scenario files (*.yaml; default: the corpus shipped with patrold)")
	cmd.Flags().IntVar(&repeat, "repeat", 1, "run every scenario this many times and report the spread (1..100)")
	cmd.Flags().StringVar(&reference, "reference", "", "evaluate a reference model instead of the configured one: perfect, lazy or noisy")
	cmd.Flags().Float64Var(&bars.MinRecall, "min-recall", bars.MinRecall, "qualification bar: least overall recall (0..1)")
	cmd.Flags().Float64Var(&bars.MinPrecision, "min-precision", bars.MinPrecision, "qualification bar: least overall precision (0..1; duplicates and findings above the measurement count against it)")
	cmd.Flags().IntVar(&bars.MaxUnsupported, "max-unsupported", bars.MaxUnsupported, "qualification bar: most unsupported findings filed")
	cmd.Flags().IntVar(&bars.MaxTokensPerRun, "max-tokens", 0, "qualification bar: most input+output tokens of one scenario run (0: no bound)")
	outputFlag(cmd, &output)
	cmd.AddCommand(newEvalCompareCmd(a))
	return cmd
}

// evalStore adapts the root's store opener to eval's.
func evalStore(em daemon.EvalModel) eval.OpenStore {
	return func(ctx context.Context, path string) (eval.Store, error) { return em.OpenStore(ctx, path) }
}

func loadScenarios(dir string) ([]*eval.Scenario, error) {
	if dir == "" {
		return eval.Corpus()
	}
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--scenarios: %w", err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("--scenarios: %s is not a directory", dir)
	}
	scs, err := eval.LoadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--scenarios: %w", err)
	}
	return scs, nil
}

func newEvalCompareCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "compare A.json B.json",
		Short: "Put two eval results (--output json) side by side",
		Args:  args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			ra, err := eval.ReadResult(argv[0])
			if err != nil {
				return usage(err)
			}
			rb, err := eval.ReadResult(argv[1])
			if err != nil {
				return usage(err)
			}
			c, err := eval.Compare(ra, rb)
			if err != nil {
				return err
			}
			if output == "json" {
				return a.printJSON(c)
			}
			return eval.WriteComparison(a.stdout, c)
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
