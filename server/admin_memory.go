package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/conversations"
)

// rebuildMemory answers POST /admin/v1/conversations/{contextId}/memory/rebuild?peer=&write=
// (conversations.Service.RebuildMemory; a write: the admin token is always needed).
func (a adminAPI) rebuildMemory(c echo.Context) error {
	ref, err := pathRef(c)
	if err != nil {
		return a.fail(c, err)
	}
	write := c.QueryParam("write") == "1" || c.QueryParam("write") == "true"
	rep, err := a.svc.RebuildMemory(c.Request().Context(), ref, write)
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, rep)
}

// RebuildMemory implements the operator commands' service (cmd/gateway):
// POST /admin/v1/conversations/{contextId}/memory/rebuild.
func (a *AdminClient) RebuildMemory(ctx context.Context, ref conversations.Ref, write bool) (conversations.MemoryReport, error) {
	w := ""
	if write {
		w = "1"
	}
	resp, err := a.do(ctx, http.MethodPost, convPath(ref.ContextID, "/memory/rebuild"), adminQuery("peer", ref.Owner, "write", w), []byte("{}"))
	if err != nil {
		return conversations.MemoryReport{}, err
	}
	defer resp.Body.Close()
	var rep conversations.MemoryReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("decode admin response: %w", err)
	}
	return rep, nil
}
