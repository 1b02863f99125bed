package shared

import (
	"github.com/ragcanary/ragcanary/api/v1alpha1"
	"github.com/ragcanary/ragcanary/internal/driver"
)

func ToCorpusCapabilities(c driver.Capabilities) *v1alpha1.CorpusCapabilities {
	out := &v1alpha1.CorpusCapabilities{ContractVersion: c.ContractVersion, AnswerSurface: c.Answer, ConversationSurface: c.Conversation}
	for _, m := range c.RevocationMethods {
		out.RevocationMethods = append(out.RevocationMethods, v1alpha1.RevocationMethod(m))
	}
	return out
}
