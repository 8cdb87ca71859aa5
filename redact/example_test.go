package redact_test

import (
	"fmt"

	"github.com/a2a-gateway/gateway/redact"
)

func ExampleText() {
	fmt.Println(redact.Text("curl -H 'Authorization: Bearer abc123' https://deploy:hunter2@example.com"))
	fmt.Println(redact.Text("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE"))
	// Output:
	// curl -H 'Authorization: Bearer [redacted:bearer-token]' https://deploy:[redacted:url-password]@example.com
	// AWS_ACCESS_KEY_ID=[redacted:aws-access-key-id]
}
