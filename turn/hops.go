package turn

import (
	"errors"

	"github.com/a2a-gateway/gateway/a2a"
)

// checkHops refuses a message whose hop metadata (a2a.HopsExtension) is present but
// malformed (a2a.ParseHops): a count such as -1 or "99" is not read as hop 0, which
// would let a caller reset the count its calls carry. Nothing of the message is stored.
func checkHops(m *a2a.Message) error {
	_, err := a2a.ParseHops(m.Metadata)
	var he *a2a.HopsError
	if errors.As(err, &he) {
		return &paramError{Field: he.Field, Reason: he.Reason}
	}
	return err
}
