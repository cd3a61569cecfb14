package logging

import (
	"bytes"
	"errors"
	"testing"
)

func TestNewHonoursLevelAndFormat(t *testing.T) {
	var b bytes.Buffer
	l := New(Config{Level: "warn", Format: "json"}, &b)
	l.Info("hidden")
	l.Warn("shown", "k", 1)
	if got := b.String(); !bytes.Contains(b.Bytes(), []byte(`"msg":"shown","k":1}`)) || bytes.Contains(b.Bytes(), []byte("hidden")) {
		t.Fatalf("json at warn: %q", got)
	}
	b.Reset()
	New(DefaultConfig(), &b).Debug("quiet")
	New(DefaultConfig(), &b).Info("text", "k", "v")
	if got := b.String(); bytes.Contains(b.Bytes(), []byte("quiet")) || !bytes.HasSuffix(b.Bytes(), []byte("level=INFO msg=text k=v\n")) {
		t.Fatalf("text at info: %q", got)
	}
}

func TestValidateNamesTheKeys(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	err := Config{Level: "loud", Format: "xml"}.Validate()
	want := errors.New("log.level: \"loud\" is not one of debug, info, warn, error\nlog.format: \"xml\" is not one of text, json")
	if err == nil || err.Error() != want.Error() {
		t.Fatalf("got %v, want %v", err, want)
	}
}
