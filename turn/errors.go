package turn

import (
	"errors"

	"github.com/a2a-gateway/gateway/a2a"
	"github.com/a2a-gateway/gateway/conversations/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// protocolError is hop 1 of the error mapping (house style B4): it turns the typed
// errors of the packages a turn calls into a2a errors that tell the peer what to fix.
// The field and the reason travel as values; nothing here reads error text. An error it
// does not know is returned as it is (the transport reports it as internal).
func protocolError(err error) error {
	var ce *contextid.Error
	var fe *ledger.FieldError
	switch {
	case errors.As(err, &ce):
		return a2a.InvalidParams("message.contextId", "%s", ce.Reason)
	case errors.As(err, &fe):
		return a2a.InvalidParams(messageField(fe), "%s", fe.Reason)
	}
	return err
}

// messageField names a ledger field as the peer knows it: the entries a turn appends
// come from the peer's message, so entries[i].messageId is message.messageId.
func messageField(fe *ledger.FieldError) string {
	switch {
	case fe.Entry < 0:
		return fe.Field
	case fe.Field == "":
		return "message"
	}
	return "message." + fe.Field
}
