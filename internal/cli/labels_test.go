package cli_test

import (
	"testing"

	"github.com/ragcanary/ragcanary/controllers"
	"github.com/ragcanary/ragcanary/internal/cli"
)

// TestNamesMatchTheControllers: the plugin finds runs and conditions by the
// names the controllers write; it copies them to stay free of the
// controllers' dependencies, and this keeps the copies honest.
func TestNamesMatchTheControllers(t *testing.T) {
	for _, c := range []struct{ plugin, controller string }{
		{cli.LabelCanary, controllers.LabelCanary},
		{cli.LabelSuite, controllers.LabelSuite},
		{cli.ConditionSLOMet, controllers.ConditionSLOMet},
		{cli.ConditionPassed, controllers.ConditionPassed},
	} {
		if c.plugin != c.controller {
			t.Errorf("plugin uses %q, the controllers %q", c.plugin, c.controller)
		}
	}
}
