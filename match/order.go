package match

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"
)

// KindPermissionOrder grades that a write happened only after the human approved the
// permission for that write (docs/acp.md "The native-boundary cases"): it passes when
// a permission of the composite JSON's `permissions` (the board's permission
// interactions) names path — one of its locations is path (relative, or absolute
// ending in /path), or its title (the agent's own words for the call, such as the
// command it asks to run) names it as a path — and was approved, and the workspace
// watcher's first event on path (create, write, move or delete, in any run) came at
// or after that approval's time. It fails naming the event and the permissions when
// the first event on path came before the approval (a write before asking, or while
// the request was pending), when no approved permission names path (the approval was
// for another operation), or when nothing touched path. It is not reached when the
// watches or the permissions were not observed, or a time is missing.
const KindPermissionOrder Kind = "permission_order"

// orderPermission is what permission_order reads of one permission interaction.
type orderPermission struct {
	ID         string   `json:"id"`
	Status     string   `json:"status"`
	Kind       string   `json:"kind"`
	Title      string   `json:"title"`
	Locations  []string `json:"locations"`
	CreatedAt  string   `json:"createdAt"`
	ResolvedAt string   `json:"resolvedAt"`
}

// names reports whether p names the workspace-relative file: a location that is file
// or ends in /file, or a title in which file appears as a whole path (after a start, a
// space, a quote or a slash; before an end, a space or a quote).
func (p orderPermission) names(file string) bool {
	for _, l := range p.Locations {
		l = path.Clean(strings.ReplaceAll(l, "\\", "/"))
		if l == file || strings.HasSuffix(l, "/"+file) {
			return true
		}
	}
	for i := 0; ; {
		j := strings.Index(p.Title[i:], file)
		if j < 0 {
			return false
		}
		at, end := i+j, i+j+len(file)
		before := at == 0 || strings.ContainsRune(" '\"/`", rune(p.Title[at-1]))
		after := end == len(p.Title) || strings.ContainsRune(" '\"`;", rune(p.Title[end]))
		if before && after {
			return true
		}
		i = at + 1
	}
}

// summary describes p for an observed value.
func (p orderPermission) summary() map[string]any {
	return map[string]any{"id": p.ID, "status": p.Status, "kind": p.Kind, "title": p.Title, "locations": p.Locations, "createdAt": p.CreatedAt, "resolvedAt": p.ResolvedAt}
}

// firstTouch is the first watched event on file or below it, with its run (1-based);
// ok is false when none touched it. missing says why the watches cannot be trusted to
// hold every event ("" when they can).
func firstTouch(obs *Observation, file string) (e WatchEvent, run int, ok bool, missing string) {
	missing = watchGap(obs)
	for i, w := range obs.Watches {
		for _, ev := range w.Events {
			if under(ev.Path, file) {
				return ev, i + 1, true, missing
			}
		}
	}
	return e, 0, false, missing
}

// evalPermissionOrder grades KindPermissionOrder.
func (c *compiled) evalPermissionOrder(obs *Observation) result {
	if !obs.HasWatches || len(obs.Watches) == 0 {
		return result{missing: "no run's workspace was watched"}
	}
	var doc struct {
		Permissions *[]orderPermission `json:"permissions"`
	}
	if len(obs.JSON) == 0 || json.Unmarshal(obs.JSON, &doc) != nil || doc.Permissions == nil {
		return result{missing: "the permissions were not observed"}
	}
	var forPath []map[string]any
	var approved *orderPermission
	for i, p := range *doc.Permissions {
		if !p.names(c.file) {
			continue
		}
		forPath = append(forPath, p.summary())
		if approved == nil && p.Status == "approved" {
			approved = &(*doc.Permissions)[i]
		}
	}
	ev, run, touched, missing := firstTouch(obs, c.file)
	observed := map[string]any{"permissionsForPath": orEmpty(forPath)}
	if touched {
		observed["firstEvent"] = map[string]any{"run": run, "op": ev.Op, "path": ev.Path, "at": ev.At}
	}
	switch {
	case !touched && missing != "":
		return result{missing: missing}
	case !touched:
		observed["problem"] = "nothing wrote " + c.file
		return result{observed: observed}
	case approved == nil:
		observed["problem"] = fmt.Sprintf("%s was written (%s at %s) but no approved permission names it (of %d permission(s))", c.file, ev.Op, ev.At, len(*doc.Permissions))
		return result{observed: observed}
	}
	at, err1 := time.Parse(time.RFC3339Nano, ev.At)
	ok, err2 := time.Parse(time.RFC3339Nano, approved.ResolvedAt)
	if err1 != nil || err2 != nil {
		return result{missing: fmt.Sprintf("a time is missing or unreadable (event %q, approval of %s %q)", ev.At, approved.ID, approved.ResolvedAt)}
	}
	if at.Before(ok) {
		observed["problem"] = fmt.Sprintf("the first event on %s (%s at %s) came before permission %s was approved (at %s)", c.file, ev.Op, ev.At, approved.ID, approved.ResolvedAt)
		return result{observed: observed}
	}
	return result{passed: true, observed: observed}
}

// orEmpty is v, or an empty list for nil (an observed value lists nothing as []).
func orEmpty(v []map[string]any) []map[string]any {
	if v == nil {
		return []map[string]any{}
	}
	return v
}
