package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/patrold/patrold/findings"
)

// SilenceList is the body of GET /api/v1/silences.
type SilenceList struct {
	Silences   []findings.Silence `json:"silences"`
	NextCursor string             `json:"next_cursor"`
}

// ExpireResponse is the body of DELETE /api/v1/silences/{id}.
type ExpireResponse struct {
	ID        string    `json:"id"`
	ExpiredAt time.Time `json:"expired_at"`
}

func (a *API) listSilences(w http.ResponseWriter, r *http.Request, _ *call) error {
	q, e := queryOf(r)
	if e != nil {
		return e
	}
	if e := checkQuery(q, "active", "limit", "cursor"); e != nil {
		return e
	}
	active := false
	switch v := q.Get("active"); v {
	case "", "false":
	case "true":
		active = true
	default:
		return invalid("active", "%q is not true or false", v)
	}
	page, e := parsePage(q, "silences", findings.DefaultPageLimit)
	if e != nil {
		return e
	}
	list, next, err := a.opts.Store.SilencesPage(r.Context(), a.opts.Now(), active, page)
	if err != nil {
		return findingError("", err)
	}
	return streamList(w, "silences", len(list), func(i int) any { return list[i] }, field{"next_cursor", next})
}

func (a *API) addSilence(w http.ResponseWriter, r *http.Request, c *call) error {
	body, e := readBody(r, a.opts.MaxBodyBytes)
	if e != nil {
		return e
	}
	out, err := a.createSilence(r, body, c.who.name)
	if err != nil {
		return err
	}
	c.target = out.ID
	writeJSON(w, http.StatusOK, out)
	return nil
}

// createSilence stores the silence body describes, as POST
// /api/v1/silences does (the web form posts the same body).
func (a *API) createSilence(r *http.Request, body []byte, actor string) (findings.Silence, error) {
	now := a.opts.Now()
	sil, e := decodeSilence(body, now, actor)
	if e != nil {
		return sil, e
	}
	out, err := a.opts.Store.AddSilence(r.Context(), sil, now)
	if err != nil {
		return out, findingError("", err)
	}
	return out, nil
}

func (a *API) expireSilence(w http.ResponseWriter, r *http.Request, _ *call) error {
	id := r.PathValue("id")
	at, err := a.endSilence(r, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ExpireResponse{ID: id, ExpiredAt: at})
	return nil
}

// endSilence ends silence id now, as DELETE /api/v1/silences/{id} does.
func (a *API) endSilence(r *http.Request, id string) (time.Time, error) {
	if e := checkText("id", id); e != nil {
		return time.Time{}, e
	}
	now := a.opts.Now()
	err := a.opts.Store.ExpireSilence(r.Context(), id, now)
	if errors.Is(err, findings.ErrNotFound) {
		return now, newError(CodeNotFound, "no active silence %q", id).with("silence_id", id)
	}
	if err != nil {
		return now, err
	}
	return now.UTC(), nil
}

// DecodeSilence decodes and validates a silence body at now as POST
// /api/v1/silences does; actor is the default author. The CLI uses it
// when no daemon answers, so both paths accept the same silences.
func DecodeSilence(body []byte, now time.Time, actor string) (findings.Silence, error) {
	s, e := decodeSilence(body, now, actor)
	if e != nil {
		return s, e
	}
	return s, nil
}
