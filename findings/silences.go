package findings

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Matchers select the findings a silence applies to. Every given matcher
// must hold; at least one must be given.
type Matchers struct {
	Resource   string   `json:"resource,omitempty"` // resource id glob
	Kind       string   `json:"kind,omitempty"`
	Category   string   `json:"category,omitempty"`
	SignalType string   `json:"signal_type,omitempty"` // finding key
	Tags       []string `json:"tags,omitempty"`
}

// Silence mutes matching findings for a time: they are recorded, not
// published and not investigated.
type Silence struct {
	ID        string    `json:"id"`
	Matchers  Matchers  `json:"matchers"`
	Comment   string    `json:"comment"`
	Author    string    `json:"author"`
	StartsAt  time.Time `json:"starts_at"`
	EndsAt    time.Time `json:"ends_at"`
	CreatedAt time.Time `json:"created_at"`
}

// MaxSilenceTags bounds a silence's tag matchers (a finding's resource
// must carry every one of them).
const MaxSilenceTags = 32

// checkTags names the first unfit tag matcher: too many, empty, or not
// something a resource tag can be.
func checkTags(tags []string) []error {
	if len(tags) > MaxSilenceTags {
		return []error{fmt.Errorf("matchers.tags: %d tags, at most %d", len(tags), MaxSilenceTags)}
	}
	for i, t := range tags {
		switch {
		case strings.TrimSpace(t) == "":
			return []error{fmt.Errorf("matchers.tags[%d]: empty", i)}
		case snapshot.IDProblem(t) != "":
			return []error{fmt.Errorf("matchers.tags[%d]: %s", i, snapshot.IDProblem(t))}
		}
	}
	return nil
}

// MaxSilence bounds how long one silence may last.
const MaxSilence = 90 * 24 * time.Hour

// A silence's window must be near now: it may start at most
// MaxSilenceBackdate in the past (a late entry for a maintenance that began
// a little earlier) and at most MaxSilenceLead ahead, and it must end after
// now. Anything else is a typo, and a far-off time would be stored as a
// row that cannot be expired.
const (
	MaxSilenceBackdate = 24 * time.Hour
	MaxSilenceLead     = 365 * 24 * time.Hour
)

// ValidateAt is Validate plus the window's place relative to now. Each
// problem is one "field: problem" line.
func (s *Silence) ValidateAt(now time.Time) error {
	var errs []error
	if err := s.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case s.StartsAt.Before(now.Add(-MaxSilenceBackdate)):
		errs = append(errs, fmt.Errorf("starts_at: %s is more than %s in the past", s.StartsAt.UTC().Format(time.RFC3339), MaxSilenceBackdate))
	case s.StartsAt.After(now.Add(MaxSilenceLead)):
		errs = append(errs, fmt.Errorf("starts_at: %s is more than %s ahead", s.StartsAt.UTC().Format(time.RFC3339), MaxSilenceLead))
	}
	if !s.EndsAt.IsZero() && !s.EndsAt.After(now) && s.EndsAt.After(s.StartsAt) {
		errs = append(errs, fmt.Errorf("ends_at: %s is not in the future", s.EndsAt.UTC().Format(time.RFC3339)))
	}
	return errors.Join(errs...)
}

// silenceInput turns validation lines into an *InputError naming the
// first field.
func silenceInput(err error) error {
	msg := err.Error()
	field, problem, ok := strings.Cut(msg, ": ")
	if !ok || strings.Contains(field, " ") {
		return &InputError{Field: "silence", Problem: msg}
	}
	return &InputError{Field: field, Problem: strings.ReplaceAll(problem, "\n", "; ")}
}

// Validate names the offending field.
func (s *Silence) Validate() error {
	var errs []error
	m := s.Matchers
	if m.Resource == "" && m.Kind == "" && m.Category == "" && m.SignalType == "" && len(m.Tags) == 0 {
		errs = append(errs, errors.New("matchers: at least one of resource, kind, category, signal_type, tags is required"))
	}
	if m.Resource != "" {
		if err := snapshot.CheckGlob(m.Resource); err != nil {
			errs = append(errs, fmt.Errorf("matchers.resource: %w", err))
		}
	}
	errs = append(errs, checkTags(m.Tags)...)
	if m.Kind != "" && !snapshot.Kind(m.Kind).Valid() {
		errs = append(errs, fmt.Errorf("matchers.kind: unknown kind %q", m.Kind))
	}
	if m.Category != "" && NormalizeCategory(m.Category) != Category(strings.ToLower(m.Category)) {
		errs = append(errs, fmt.Errorf("matchers.category: unknown category %q", m.Category))
	}
	if strings.TrimSpace(s.Comment) == "" {
		errs = append(errs, errors.New("comment: required"))
	}
	if strings.TrimSpace(s.Author) == "" {
		errs = append(errs, errors.New("author: required"))
	}
	switch {
	case s.EndsAt.IsZero():
		errs = append(errs, errors.New("ends_at: required"))
	case !s.EndsAt.After(s.StartsAt):
		errs = append(errs, errors.New("ends_at: must be after starts_at"))
	case s.EndsAt.Sub(s.StartsAt) > MaxSilence:
		errs = append(errs, fmt.Errorf("ends_at: a silence may last at most %s", MaxSilence))
	}
	return errors.Join(errs...)
}

// Active reports whether the silence is in force at now.
func (s *Silence) Active(now time.Time) bool { return !now.Before(s.StartsAt) && now.Before(s.EndsAt) }

// Matches reports whether the silence's matchers select f.
func (m Matchers) Matches(f *Finding) bool {
	if m.Resource != "" && !snapshot.Glob(m.Resource, f.ResourceID) {
		return false
	}
	if m.Kind != "" && !strings.EqualFold(m.Kind, f.ResourceKind) {
		return false
	}
	if m.Category != "" && !strings.EqualFold(m.Category, string(f.Category)) {
		return false
	}
	if m.SignalType != "" && NormalizeKey(m.SignalType) != f.Key {
		return false
	}
	for _, t := range m.Tags {
		found := false
		for _, ft := range f.ResourceTags {
			if strings.EqualFold(t, ft) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// SilenceSet is the silences in force at one moment.
type SilenceSet []Silence

// Silenced reports whether any silence matches f.
func (ss SilenceSet) Silenced(f *Finding) bool {
	for i := range ss {
		if ss[i].Matchers.Matches(f) {
			return true
		}
	}
	return false
}

// PrepareSilence readies a new silence for storing at now: it starts now
// unless it says otherwise, it must validate (an *InputError naming the
// first field), and it gets its id and creation time.
func PrepareSilence(sil Silence, now time.Time) (Silence, error) {
	if sil.StartsAt.IsZero() {
		sil.StartsAt = now
	}
	if err := sil.ValidateAt(now); err != nil {
		return sil, silenceInput(err)
	}
	sil.ID, sil.CreatedAt = NewID(now), now
	return sil, nil
}
