package main

import (
	"io"
	"testing"
)

func TestConversationFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		// reuses and max are the expected Config fields.
		reuses bool
		max    int
	}{
		{args: nil, reuses: false, max: 1000},
		{args: []string{"--conversation-reuses-history", "--max-conversations", "5"}, reuses: true, max: 5},
	} {
		var o options
		if err := newFlagSet(&o, io.Discard).Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if o.cfg.ConversationReusesHistory != tc.reuses || o.cfg.MaxConversations != tc.max {
			t.Errorf("%v: reuses %v max %d, want %v %d", tc.args, o.cfg.ConversationReusesHistory, o.cfg.MaxConversations, tc.reuses, tc.max)
		}
	}
}
