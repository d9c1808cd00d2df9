//go:build !unix

package driver

import "io/fs"

// Without Unix permissions only the symbolic link rule of CheckPath applies.
func checkPrivate(string, fs.FileInfo, checkUser) error { return nil }

func checkOwner(string, fs.FileInfo, checkUser) error { return nil }

func checkDirectory(string, string, fs.FileInfo, checkUser) error { return nil }
