package model_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
)

func TestNewHTTPClientFillsDefaultsAndValidates(t *testing.T) {
	defaults := model.EndpointOptions{BaseURL: "https://example.test", ContextWindow: 9000, MaxOutputTokens: 100, Timeout: time.Minute}
	c, err := model.NewHTTPClient(model.ProviderAnthropic, model.ClientOptions{
		Endpoint: model.EndpointOptions{Model: "m", ContextWindow: 20000}, APIKey: "k"}, defaults)
	if err != nil {
		t.Fatal(err)
	}
	want := model.EndpointOptions{BaseURL: "https://example.test", Model: "m", ContextWindow: 20000, MaxOutputTokens: 100, Timeout: time.Minute}
	if c.Endpoint() != want || c.Name() != model.ProviderAnthropic || c.Model() != "m" || c.ContextWindow() != 20000 ||
		c.APIKey().Reveal() != "k" || c.MaxRetryDelay != model.DefaultMaxRetryDelay || c.HTTP == nil || c.HTTP == http.DefaultClient {
		t.Fatalf("client %+v endpoint %+v, want endpoint %+v", c, c.Endpoint(), want)
	}
	_, err = model.NewHTTPClient(model.ProviderScript, model.ClientOptions{}, defaults)
	if err == nil || err.Error() != `model: "script" is no HTTP provider` {
		t.Fatalf("script: %v", err)
	}
	_, err = model.NewHTTPClient(model.ProviderOpenAI, model.ClientOptions{Endpoint: model.EndpointOptions{Model: "m", BaseURL: "ftp://x"}}, defaults)
	if err == nil || !strings.Contains(err.Error(), "model.openai.base_url") {
		t.Fatalf("a bad base_url: %v", err)
	}
}
