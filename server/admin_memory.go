package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/conversations"
)

// checkMemory answers GET /admin/v1/conversations/{contextId}/memory?peer= (the rebuild
// report, nothing written) and rebuildMemory POST …/memory/rebuild?peer= (the same, the
// latest snapshot rebuilt appended when it differs: a write, which always needs the admin
// token); conversations.Service.RebuildMemory.
func (a adminAPI) checkMemory(c echo.Context) error { return a.memory(c, false) }

func (a adminAPI) rebuildMemory(c echo.Context) error { return a.memory(c, true) }

func (a adminAPI) memory(c echo.Context, write bool) error {
	ref, err := pathRef(c)
	if err != nil {
		return a.fail(c, err)
	}
	rep, err := a.svc.RebuildMemory(c.Request().Context(), ref, write)
	if err != nil {
		return a.fail(c, err)
	}
	return c.JSON(http.StatusOK, rep)
}

// RebuildMemory implements the operator commands' service (cmd/gateway): GET
// /admin/v1/conversations/{contextId}/memory, or with write POST …/memory/rebuild.
func (a *AdminClient) RebuildMemory(ctx context.Context, ref conversations.Ref, write bool) (conversations.MemoryReport, error) {
	var rep conversations.MemoryReport
	if !write {
		err := a.getJSON(ctx, convPath(ref.ContextID, "/memory"), adminQuery("peer", ref.Owner), &rep)
		return rep, err
	}
	resp, err := a.do(ctx, http.MethodPost, convPath(ref.ContextID, "/memory/rebuild"), adminQuery("peer", ref.Owner), []byte("{}"))
	if err != nil {
		return rep, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
		return rep, fmt.Errorf("decode admin response: %w", err)
	}
	return rep, nil
}
