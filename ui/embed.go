// Package ui holds the web console's built assets (dist/, made by `make ui`
// from the sources beside this file) so that the dds binary serves them
// without a file on disk.
package ui

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

// Dist returns the built console: index.html at its root, hashed assets under assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil { // only if the embed directive above names another directory
		panic(err)
	}
	return sub
}
