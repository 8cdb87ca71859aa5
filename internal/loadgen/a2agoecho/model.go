package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// modelExecutor is the peer of `make bench-llm` (issue #40 item 4): a2a-go's streaming
// template (a2asrv.AgentExecutor's doc) over an OpenAI-compatible model at url: each
// delta the model streams becomes an artifact update, then a final completed status.
// It keeps nothing but a2a-go's in-memory task store keeps.
type modelExecutor struct {
	url    string // the API base: requests go to url + "/chat/completions"
	client *http.Client
}

// Execute streams the model's reply to q.
func (m modelExecutor) Execute(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	if reqCtx.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateSubmitted, nil)); err != nil {
			return err
		}
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	var artifact a2a.ArtifactID
	err := m.stream(ctx, func(text string) error {
		var ev *a2a.TaskArtifactUpdateEvent
		if artifact == "" {
			ev = a2a.NewArtifactEvent(reqCtx, a2a.TextPart{Text: text})
			artifact = ev.Artifact.ID
		} else {
			ev = a2a.NewArtifactUpdateEvent(reqCtx, artifact, a2a.TextPart{Text: text})
		}
		return q.Write(ctx, ev)
	})
	state := a2a.TaskStateCompleted
	if err != nil {
		state = a2a.TaskStateFailed
	}
	done := a2a.NewStatusUpdateEvent(reqCtx, state, nil)
	done.Final = true
	return q.Write(ctx, done)
}

// Cancel implements a2asrv.AgentExecutor.
func (modelExecutor) Cancel(ctx context.Context, reqCtx *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, a2a.NewStatusUpdateEvent(reqCtx, a2a.TaskStateCanceled, nil))
}

// stream asks the model for a streamed reply and calls emit with each delta's text.
func (m modelExecutor) stream(ctx context.Context, emit func(string) error) error {
	body := []byte(`{"model":"bench","stream":true,"messages":[{"role":"user","content":"stream me a long answer"}]}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("model: http %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok || bytes.Equal(data, []byte("[DONE]")) {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(data, &chunk); err != nil {
			return err
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			if err := emit(chunk.Choices[0].Delta.Content); err != nil {
				return err
			}
		}
	}
	return sc.Err()
}
