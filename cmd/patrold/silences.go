package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// withSilences runs viaAPI when the daemon answers, else viaStore on the
// local database; the store validates a silence as the API does.
func (a *app) withSilences(ctx context.Context, mutating bool, viaAPI func(*api.Client) error, viaStore func(*store.Store) error) error {
	c, err := a.liveClient(ctx, mutating, 30*time.Second)
	if err != nil {
		return err
	}
	if c != nil {
		return apiErr(viaAPI(c))
	}
	root, st, err := a.openExistingStore(ctx)
	if err != nil {
		return err
	}
	defer root.Close()
	return viaStore(st)
}

func newSilencesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "silences", Short: "List, create and expire silences (matching findings are recorded, not published)"}
	var output string
	var active bool
	var page findings.Page
	list := &cobra.Command{
		Use:   "list",
		Short: "List silences, newest first (--active: only those in force now)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if err := checkPage("silences", page); err != nil {
				return err
			}
			var out []findings.Silence
			next := ""
			err := a.withSilences(cmd.Context(), false, func(c *api.Client) error {
				l, err := c.SilencesPage(cmd.Context(), active, page)
				out, next = l.Silences, l.NextCursor
				return err
			}, func(st *store.Store) (err error) {
				out, next, err = st.SilencesPage(cmd.Context(), time.Now(), active, page)
				return err
			})
			if err != nil {
				return err
			}
			defer a.nextPage(next)
			if out == nil {
				out = []findings.Silence{}
			}
			if output == "json" {
				return a.printPage(cmd, "silences", out, len(out), next)
			}
			printSilences(a, out)
			return nil
		},
	}
	list.Flags().BoolVar(&active, "active", false, "only silences in force now")
	outputFlag(list, &output)
	pageFlags(list, &page, findings.DefaultPageLimit)
	cmd.AddCommand(list, newSilenceCreateCmd(a), newSilenceExpireCmd(a))
	return cmd
}

func printSilences(a *app, list []findings.Silence) {
	if len(list) == 0 {
		fmt.Fprintln(a.stdout, "no silences")
		return
	}
	now := time.Now()
	fmt.Fprintf(a.stdout, "%-26s  %-7s  %-20s  %-20s  %-40s  %s\n", "ID", "STATE", "STARTS", "ENDS", "MATCHERS", "COMMENT")
	for _, s := range list {
		state := "active"
		switch {
		case !now.Before(s.EndsAt):
			state = "expired"
		case now.Before(s.StartsAt):
			state = "pending"
		}
		fmt.Fprintf(a.stdout, "%-26s  %-7s  %-20s  %-20s  %-40s  %s\n", s.ID, state, s.StartsAt.UTC().Format(time.RFC3339),
			s.EndsAt.UTC().Format(time.RFC3339), matcherText(s.Matchers), s.Comment)
	}
}

// matcherText renders matchers as key=value pairs in a fixed order.
func matcherText(m findings.Matchers) string {
	var parts []string
	for _, kv := range [][2]string{{"resource", m.Resource}, {"kind", m.Kind}, {"category", m.Category}, {"signal_type", m.SignalType}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+"="+kv[1])
		}
	}
	if len(m.Tags) > 0 {
		parts = append(parts, "tags="+strings.Join(m.Tags, ","))
	}
	return strings.Join(parts, " ")
}

func newSilenceCreateCmd(a *app) *cobra.Command {
	var output, dur, ends, starts string
	var sil findings.Silence
	cmd := &cobra.Command{
		Use:   "create --comment TEXT (--for DURATION | --ends-at TIME) [matchers]",
		Short: "Create a silence; at least one matcher (--resource, --kind, --category, --signal-type, --tag)",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			req := api.SilenceRequest{Matchers: sil.Matchers, Comment: sil.Comment, Author: sil.Author, Duration: dur}
			if (dur == "") == (ends == "") {
				return usage(errors.New("--for: give either --for or --ends-at"))
			}
			for _, t := range []struct {
				flag, v string
				dst     **time.Time
			}{{"starts-at", starts, &req.StartsAt}, {"ends-at", ends, &req.EndsAt}} {
				if t.v == "" {
					continue
				}
				at, err := time.Parse(time.RFC3339, t.v)
				if err != nil {
					return usage(fmt.Errorf("--%s: %q is not an RFC 3339 time", t.flag, t.v))
				}
				*t.dst = &at
			}
			var out findings.Silence
			err := a.withSilences(cmd.Context(), true, func(c *api.Client) (err error) {
				out, err = c.AddSilence(cmd.Context(), req)
				return err
			}, func(st *store.Store) error {
				now := time.Now()
				s, err := silenceFromRequest(req, now)
				if err != nil {
					return err
				}
				out, err = st.AddSilence(cmd.Context(), s, now)
				return err
			})
			var ie *findings.InputError
			if errors.As(err, &ie) {
				return usage(fmt.Errorf("silence %s", ie.Error()))
			}
			if err != nil {
				return err
			}
			if output == "json" {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "silence %s until %s: %s\n", out.ID, out.EndsAt.UTC().Format(time.RFC3339), matcherText(out.Matchers))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sil.Matchers.Resource, "resource", "", "resource id glob, e.g. vm/1*")
	f.StringVar(&sil.Matchers.Kind, "kind", "", "resource kind")
	f.StringVar(&sil.Matchers.Category, "category", "", "finding category")
	f.StringVar(&sil.Matchers.SignalType, "signal-type", "", "finding key, e.g. high_disk")
	f.StringSliceVar(&sil.Matchers.Tags, "tag", nil, "resource tag (repeatable; every tag must match)")
	f.StringVar(&sil.Comment, "comment", "", "why (required)")
	f.StringVar(&sil.Author, "author", "cli", "who")
	f.StringVar(&dur, "for", "", "how long, e.g. 2h (at most 90 days)")
	f.StringVar(&ends, "ends-at", "", "end time (RFC 3339)")
	f.StringVar(&starts, "starts-at", "", "start time (RFC 3339; default now)")
	outputFlag(cmd, &output)
	return cmd
}

// silenceFromRequest is the silence a request asks for at now, as the
// API decodes it (the store then validates it).
func silenceFromRequest(req api.SilenceRequest, now time.Time) (findings.Silence, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return findings.Silence{}, err
	}
	s, e := api.DecodeSilence(body, now, "cli")
	if e != nil {
		return s, apiErr(e)
	}
	return s, nil
}

func newSilenceExpireCmd(a *app) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "expire ID",
		Short: "End a silence now",
		Args:  args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			id := argv[0]
			if err := checkID("silence", id); err != nil {
				return err
			}
			now := time.Now()
			err := a.withSilences(cmd.Context(), true, func(c *api.Client) error {
				return c.ExpireSilence(cmd.Context(), id)
			}, func(st *store.Store) error {
				return st.ExpireSilence(cmd.Context(), id, now)
			})
			if err != nil {
				return err
			}
			if output == "json" {
				return a.printJSON(api.ExpireResponse{ID: id, ExpiredAt: now.UTC()})
			}
			fmt.Fprintf(a.stdout, "silence %s expired\n", id)
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
