package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/patrold/patrold/contracts"
)

// Webhook request headers.
const (
	HeaderSignature = "X-Patrold-Signature-256" // "sha256=<hex HMAC-SHA256 of the body>"
	HeaderEventID   = "X-Patrold-Event-Id"      // the CloudEvents id: deduplicate on it
	HeaderAttempt   = "X-Patrold-Delivery-Attempt"
	userAgent       = "patrold-notify"
)

// Sign returns the signature header value of body under secret.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify reports whether header is the signature of body under secret
// (constant time); receivers in Go can use it as is.
func Verify(secret, body []byte, header string) bool {
	return hmac.Equal([]byte(header), []byte(Sign(secret, body)))
}

// webhookSink posts every event it receives, the CloudEvents envelope as
// published, to one URL.
type webhookSink struct {
	opts   SinkOptions // defaults applied
	secret []byte
	client *http.Client
}

func (w *webhookSink) deliver(ctx context.Context, msg jetstream.Msg) error {
	body := msg.Data()
	ev, err := contracts.DecodeEvent(body)
	if err != nil {
		return &permanentError{err}
	}
	attempt := uint64(1)
	if md, err := msg.Metadata(); err == nil {
		attempt = md.NumDelivered
	}
	return w.send(ctx, body, ev.ID, attempt)
}

// send POSTs one envelope; any answer but 2xx is an error.
func (w *webhookSink) send(ctx context.Context, body []byte, id string, attempt uint64) error {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Webhook.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.opts.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", RedactURL(w.opts.Webhook.URL), err)
	}
	req.Header.Set("Content-Type", "application/cloudevents+json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set(HeaderEventID, id)
	req.Header.Set(HeaderAttempt, strconv.FormatUint(attempt, 10))
	if len(w.secret) > 0 {
		req.Header.Set(HeaderSignature, Sign(w.secret, body))
	}
	resp, err := w.client.Do(req)
	if err != nil {
		// the URL may be the credential: never in an error or a log line
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("webhook %s: %w", RedactURL(w.opts.Webhook.URL), err)
	}
	defer resp.Body.Close()
	msgBody, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("webhook %s: HTTP %d: %s", RedactURL(w.opts.Webhook.URL), resp.StatusCode, strings.TrimSpace(string(msgBody)))
	}
	return nil
}
