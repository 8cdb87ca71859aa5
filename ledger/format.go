package ledger

// defaultFormat is the format of a new file when Options.Format is zero.
var defaultFormat = Format2
