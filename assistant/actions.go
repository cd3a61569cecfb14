package assistant

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

// Risk is an action's declared risk (YAML actions[].risk).
type Risk string

// Risks. An action declared RiskNever is never executed by a session.
const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
	RiskNever  Risk = "never"
)

// Risks lists every risk.
var Risks = []Risk{RiskLow, RiskMedium, RiskHigh, RiskNever}

// Placeholders substituted in an action's arguments (never in argv[0]).
const (
	PlaceholderResourceID = "{resource_id}"
	PlaceholderFindingID  = "{finding_id}"
	PlaceholderKey        = "{key}"
)

// Action is one declared remediation action.
type Action struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Command     []string `json:"command"`
	Risk        Risk     `json:"risk"`
	// Kinds are the resource kinds the action may target ("guest"
	// expanded to vm and container).
	Kinds []snapshot.Kind `json:"kinds"`
	// Signals restricts the action to findings with these keys
	// (normalised); ["*"] is the explicit "any key". The playbook only picks
	// actions that name the key explicitly.
	Signals []string `json:"signals"`
}

var actionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ParseActions validates the declared actions, naming the key as
// actions[i].field, and returns them with their signal keys normalised.
func ParseActions(cfgs []ActionSpec) ([]Action, error) {
	var errs []error
	out := make([]Action, 0, len(cfgs))
	seen := map[string]bool{}
	for i, c := range cfgs {
		key := fmt.Sprintf("actions[%d]", i)
		switch {
		case !actionName.MatchString(c.Name):
			errs = append(errs, fmt.Errorf("%s.name: %q must match %s", key, c.Name, actionName))
		case seen[c.Name]:
			errs = append(errs, fmt.Errorf("%s.name: duplicate action %q", key, c.Name))
		}
		seen[c.Name] = true
		if len(c.Command) == 0 || strings.TrimSpace(c.Command[0]) == "" {
			errs = append(errs, fmt.Errorf("%s.command: required (argv, no shell)", key))
		} else if strings.Contains(c.Command[0], "{") {
			errs = append(errs, fmt.Errorf("%s.command[0]: placeholders are only substituted in arguments, not in the program %q", key, c.Command[0]))
		}
		if !slices.Contains(Risks, Risk(c.Risk)) {
			errs = append(errs, fmt.Errorf("%s.risk: %q is not one of low, medium, high, never", key, c.Risk))
		}
		a := Action{Name: c.Name, Description: c.Description, Command: slices.Clone(c.Command), Risk: Risk(c.Risk)}
		if len(c.Kinds) == 0 {
			errs = append(errs, fmt.Errorf("%s.kinds: required: the resource kinds the action may target (%s)", key, strings.Join(ActionKinds, ", ")))
		}
		for j, k := range c.Kinds {
			switch {
			case k == "guest":
				a.Kinds = append(a.Kinds, snapshot.KindVM, snapshot.KindContainer)
			case slices.Contains(ActionKinds, k):
				a.Kinds = append(a.Kinds, snapshot.Kind(k))
			default:
				errs = append(errs, fmt.Errorf("%s.kinds[%d]: %q is not one of %s", key, j, k, strings.Join(ActionKinds, ", ")))
			}
		}
		if len(c.Signals) == 0 {
			errs = append(errs, fmt.Errorf(`%s.signals: required: the signal types the action is declared for, or ["*"] for any signal`, key))
		}
		for j, s := range c.Signals {
			switch {
			case strings.TrimSpace(s) == "":
				errs = append(errs, fmt.Errorf("%s.signals[%d]: empty", key, j))
			case s == AnySignal:
				if len(c.Signals) > 1 {
					errs = append(errs, fmt.Errorf(`%s.signals[%d]: "*" (any signal) must be the only entry`, key, j))
				}
				a.Signals = append(a.Signals, AnySignal)
			default:
				a.Signals = append(a.Signals, findings.NormalizeKey(s))
			}
		}
		out = append(out, a)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// AppliesTo reports whether the action may be used for a finding key:
// declared for it, or for any signal (["*"]). No signals means none.
func (a Action) AppliesTo(key string) bool {
	return slices.Equal(a.Signals, []string{AnySignal}) || slices.Contains(a.Signals, findings.NormalizeKey(key))
}

// AllowsKind reports whether the action may target a resource of kind k.
func (a Action) AllowsKind(k snapshot.Kind) bool { return slices.Contains(a.Kinds, k) }

// Declares reports whether the action names the key in its signals
// explicitly (what the playbook requires).
func (a Action) Declares(key string) bool {
	return slices.Contains(a.Signals, findings.NormalizeKey(key))
}

// Decision is what the risk policy says about one write.
type Decision string

// Decisions.
const (
	DecisionRun      Decision = "run"
	DecisionApproval Decision = "approval"
	DecisionBlocked  Decision = "blocked"
)

// Decide applies docs/ASSISTANT.md#autonomy:
// - monitor never writes;
// - approval waits for an operator on every write;
// - assisted runs low-risk actions and waits on the rest;
// - full runs everything not declared never.
//
// Risk never, an unknown risk or an unknown autonomy is blocked (fail
// closed).
func Decide(autonomy findings.Autonomy, risk Risk) Decision {
	if risk == RiskNever || !slices.Contains(Risks, risk) {
		return DecisionBlocked
	}
	switch autonomy {
	case findings.AutonomyApproval:
		return DecisionApproval
	case findings.AutonomyAssisted:
		if risk == RiskLow {
			return DecisionRun
		}
		return DecisionApproval
	case findings.AutonomyFull:
		return DecisionRun
	}
	return DecisionBlocked
}

// autonomyRank orders the levels from the strictest; unknown is monitor.
func autonomyRank(a findings.Autonomy) int {
	switch a {
	case findings.AutonomyApproval:
		return 1
	case findings.AutonomyAssisted:
		return 2
	case findings.AutonomyFull:
		return 3
	}
	return 0
}

// Effective returns the stricter of the request's and the current
// autonomy: lowering patrol.autonomy applies to queued requests too. An
// empty request autonomy takes the current one.
func Effective(request, current findings.Autonomy) findings.Autonomy {
	if request == "" {
		request = current
	}
	if autonomyRank(request) <= autonomyRank(current) {
		if autonomyRank(request) == 0 {
			return findings.AutonomyMonitor
		}
		return request
	}
	if autonomyRank(current) == 0 {
		return findings.AutonomyMonitor
	}
	return current
}
