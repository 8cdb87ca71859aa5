module github.com/a2a-gateway/gateway

go 1.26

require github.com/google/uuid v1.6.0
