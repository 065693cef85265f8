//go:build !unix

package main

// benchGateways is Unix-only, like the test gateways it starts.
func benchGateways() []*result { return nil }
