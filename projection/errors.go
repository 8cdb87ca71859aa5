package projection

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the package returns wraps one of them (test with
// [errors.Is]); the wrapping error says what is wrong.
var (
	// ErrInvalid: the input breaks a documented rule (a current item that is not a
	// model-visible user message, history out of seq order, a negative budget, a bad
	// argument to a mapper, a request with an unknown role).
	ErrInvalid = errors.New("projection: invalid input")
	// ErrOverBudget: the instruction stack (platform policy, operator policy, peer
	// framing) does not fit Budget.System. It is a configuration error: nothing is cut
	// from policy text.
	ErrOverBudget = errors.New("projection: system section over budget")
	// ErrToolPairing: a request has a tool call without its result right after it, or a
	// tool result that answers no call right before it (DESIGN P-2). The request must not
	// be sent. Requests made by [Build] never have this error.
	ErrToolPairing = errors.New("projection: tool call and result not paired")
)

// invalid returns an error naming what is wrong that wraps ErrInvalid.
func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrInvalid)...)
}

// unpaired returns an error naming what is wrong that wraps ErrToolPairing.
func unpaired(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, ErrToolPairing)...)
}
