package node

import (
	"os"
	"strings"
	"testing"
)

// TestBridgeKeepsItsAddress checks that the pods' bridge keeps its MAC
// address while ports with lower addresses join and leave, as pods' veths
// do: the pods' neighbour entries for their gateway stay right. It needs
// root, as the real node does.
func TestBridgeKeepsItsAddress(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making a bridge needs root")
	}
	const bridge = "sstestbr0"
	t.Cleanup(func() { _ = ip("link", "delete", bridge) })
	if err := createBridge(bridge, "172.30.254.1/24"); err != nil {
		t.Fatal(err)
	}
	address := func() string {
		data, err := os.ReadFile("/sys/class/net/" + bridge + "/address")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	if got := address(); got != bridgeAddress {
		t.Fatalf("the bridge's address is %s, want %s", got, bridgeAddress)
	}
	// Ports with addresses below and above the bridge's, joining then
	// leaving one by one.
	ports := map[string]string{"sstestv0": "02:00:00:00:00:01", "sstestv1": "02:00:00:00:00:02", "sstestv2": "fe:00:00:00:00:03"}
	for port, mac := range ports {
		t.Cleanup(func() { _ = ip("link", "delete", port) })
		if err := ip("link", "add", port, "address", mac, "type", "veth", "peer", "name", port+"p"); err != nil {
			t.Fatal(err)
		}
		if err := ip("link", "set", port, "master", bridge, "up"); err != nil {
			t.Fatal(err)
		}
		if got := address(); got != bridgeAddress {
			t.Fatalf("after %s (%s) joined, the bridge's address is %s, want %s", port, mac, got, bridgeAddress)
		}
	}
	for port := range ports {
		if err := ip("link", "delete", port); err != nil {
			t.Fatal(err)
		}
		if got := address(); got != bridgeAddress {
			t.Fatalf("after %s left, the bridge's address is %s, want %s", port, got, bridgeAddress)
		}
	}
	// Created again over an existing bridge (a node restarted), it is set
	// again.
	if err := ip("link", "set", bridge, "address", "02:00:00:00:00:09"); err != nil {
		t.Fatal(err)
	}
	if err := createBridge(bridge, "172.30.254.1/24"); err != nil {
		t.Fatal(err)
	}
	if got := address(); got != bridgeAddress {
		t.Fatalf("created again, the bridge's address is %s, want %s", got, bridgeAddress)
	}
}
