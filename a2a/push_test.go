package a2a

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeSetPushParams(t *testing.T) {
	p, err := DecodeSetPushParams(json.RawMessage(`{"taskId":"t","id":"c","url":"https://h/","token":"k","authentication":{"scheme":"Bearer","credentials":"x"}}`), V1)
	if err != nil || p.TaskID != "t" || p.Config.ID != "c" || p.Config.Token != "k" || p.Config.AuthSchemes[0] != "Bearer" || p.Config.Dialect != V1 {
		t.Fatalf("v1 = %+v, %v", p, err)
	}
	p, err = DecodeSetPushParams(json.RawMessage(`{"taskId":"t","pushNotificationConfig":{"url":"https://h/","authentication":{"schemes":["Basic","Bearer"]}}}`), V03)
	if err != nil || p.Config.URL != "https://h/" || len(p.Config.AuthSchemes) != 2 || p.Config.Dialect != V03 {
		t.Fatalf("v0.3 = %+v, %v", p, err)
	}
	for _, c := range []struct {
		raw   string
		d     Dialect
		field string
	}{
		{`{"url":"https://h/"}`, V1, "taskId"},
		{`{"taskId":"t"}`, V1, "url"},
		{`{"taskId":"t","url":"https://h/","authentication":{}}`, V1, "authentication.scheme"},
		{`{"taskId":"t"}`, V03, "pushNotificationConfig"},
		{`{"taskId":"t","pushNotificationConfig":{}}`, V03, "pushNotificationConfig.url"},
		{`[]`, V1, "params"},
	} {
		_, err := DecodeSetPushParams(json.RawMessage(c.raw), c.d)
		var ae *Error
		if !errors.Is(err, ErrInvalidParams) || !errors.As(err, &ae) || !strings.Contains(ae.Error(), c.field) {
			t.Errorf("%s (%v): err = %v, want invalid params naming %s", c.raw, c.d, err, c.field)
		}
	}
}

func TestDecodeSendPushConfig(t *testing.T) {
	msg := `"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"hi"}]}`
	p, err := DecodeSendParams(json.RawMessage(`{`+msg+`,"configuration":{"taskPushNotificationConfig":{"url":"https://h/","id":"c"}}}`), V1)
	if err != nil || p.Config.Push == nil || p.Config.Push.URL != "https://h/" || p.Config.Push.ID != "c" || p.Config.Push.Dialect != V1 {
		t.Fatalf("v1 send push = %+v, %v", p.Config.Push, err)
	}
	msg03 := `"message":{"messageId":"m","role":"user","kind":"message","parts":[{"kind":"text","text":"hi"}]}`
	p, err = DecodeSendParams(json.RawMessage(`{`+msg03+`,"configuration":{"pushNotificationConfig":{"url":"https://h/"}}}`), V03)
	if err != nil || p.Config.Push == nil || p.Config.Push.Dialect != V03 {
		t.Fatalf("v0.3 send push = %+v, %v", p, err)
	}
	if _, err := DecodeSendParams(json.RawMessage(`{`+msg03+`,"configuration":{"pushNotificationConfig":{}}}`), V03); !errors.Is(err, ErrInvalidParams) {
		t.Errorf("push config without url: err = %v", err)
	}
	p, _ = DecodeSendParams(json.RawMessage(`{`+msg+`}`), V1)
	if p.Config.Push != nil {
		t.Error("a send without a push config has one")
	}
}

func TestEncodeTaskPushConfigs(t *testing.T) {
	ts := []TaskPushConfig{{TaskID: "t", Config: PushConfig{ID: "c", URL: "https://h/", AuthSchemes: []string{"Bearer"}, AuthCredentials: "x"}}}
	b, _ := EncodeTaskPushConfigs(ts, V1)
	if string(b) != `{"configs":[{"id":"c","taskId":"t","url":"https://h/","authentication":{"scheme":"Bearer","credentials":"x"}}],"nextPageToken":""}` {
		t.Errorf("v1 list = %s", b)
	}
	b, _ = EncodeTaskPushConfigs(ts, V03)
	if string(b) != `[{"taskId":"t","pushNotificationConfig":{"id":"c","url":"https://h/","authentication":{"schemes":["Bearer"],"credentials":"x"}}}]` {
		t.Errorf("v0.3 list = %s", b)
	}
	if b, _ := EncodeTaskPushConfigs(nil, V03); string(b) != `[]` {
		t.Errorf("empty v0.3 list = %s", b)
	}
}

func TestCardDeclaresPushNotifications(t *testing.T) {
	for _, on := range []bool{false, true} {
		c := BuildCard(CardConfig{PushNotifications: on}, "https://gw/")
		if c.Capabilities.PushNotifications != on || c.V1().Capabilities.PushNotifications != on {
			t.Errorf("PushNotifications %v: card says %v / %v", on, c.Capabilities.PushNotifications, c.V1().Capabilities.PushNotifications)
		}
	}
}
