//go:build !registry

package main

func registryFindings(string) []Finding { return nil }
