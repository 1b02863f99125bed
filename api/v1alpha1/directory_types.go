package v1alpha1

// DirectoryType names a kind of directory a Corpus takes its groups from.
// +kubebuilder:validation:Enum=LDAP
type DirectoryType string

// DirectoryLDAP is an LDAP directory (OpenLDAP, Active Directory, …).
const DirectoryLDAP DirectoryType = "LDAP"

// Directory is the group authority of a Corpus: the organisation's
// directory that the system under test synchronises its groups from. With
// one, a canary's group memberships (the persona added to the group when a
// RemoveFromGroup canary shares, removed when it revokes, restored at
// cleanup) are changed in the directory, not in the target, so the run
// measures how long the target's group sync keeps serving a revoked
// member. The document's grant to the group stays with the target (or its
// permissions backend).
// +kubebuilder:validation:XValidation:rule="self.type != 'LDAP' || has(self.ldap)",message="ldap is required when type is LDAP"
type Directory struct {
	// type of directory.
	// +required
	Type DirectoryType `json:"type"`

	// ldap configures an LDAP directory.
	// +optional
	LDAP *LDAPDirectory `json:"ldap,omitempty"`
}

// LDAPMemberAttribute is the group attribute that lists its members.
// +kubebuilder:validation:Enum=member;uniqueMember;memberUid
type LDAPMemberAttribute string

const (
	// LDAPMember lists members by DN (groupOfNames).
	LDAPMember LDAPMemberAttribute = "member"
	// LDAPUniqueMember lists members by DN (groupOfUniqueNames).
	LDAPUniqueMember LDAPMemberAttribute = "uniqueMember"
	// LDAPMemberUID lists members by their user ID, the persona's subject
	// itself (posixGroup).
	LDAPMemberUID LDAPMemberAttribute = "memberUid"
)

// LDAPDirectory is where and how group memberships are changed in an LDAP
// directory. A persona's entry is found by userDN or by userSearch.
// +kubebuilder:validation:XValidation:rule="has(self.userDN) != has(self.userSearch)",message="set exactly one of userDN and userSearch"
type LDAPDirectory struct {
	// url is ldap://host:port or ldaps://host:port. It must be allowed by
	// the operator's --allowed-target-urls like any target, and its address
	// passes the same checks (denied CIDRs).
	// +required
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^ldaps?://`
	URL string `json:"url"`

	// bindDN is the DN the operator binds as; it needs write access to the
	// groups' member attribute.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	BindDN string `json:"bindDN"`

	// bindPasswordSecretRef selects the Secret key holding the bind
	// password; the Secret must be labelled ragcanary.dev/credential=true.
	// +required
	BindPasswordSecretRef SecretKeyReference `json:"bindPasswordSecretRef"`

	// caSecretRef selects a Secret key holding the PEM CA that signs an
	// ldaps:// server's certificate; system roots when unset.
	// +optional
	CASecretRef *SecretKeyReference `json:"caSecretRef,omitempty"`

	// groupDN is the DN of a group, with {group} where the canary's group
	// name goes (escaped as a DN value), e.g.
	// "cn={group},ou=groups,dc=example,dc=org".
	// +required
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[^{}]*\{group\}[^{}]*$`
	GroupDN string `json:"groupDN"`

	// memberAttribute is the group attribute listing members: member or
	// uniqueMember (the members' DNs) or memberUid (their user IDs).
	// +optional
	// +kubebuilder:default=member
	MemberAttribute LDAPMemberAttribute `json:"memberAttribute,omitempty"`

	// userDN is the DN of a persona's entry, with {subject} where the
	// persona's subject goes (escaped as a DN value), e.g.
	// "uid={subject},ou=people,dc=example,dc=org".
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[^{}]*\{subject\}[^{}]*$`
	UserDN string `json:"userDN,omitempty"`

	// userSearch finds a persona's entry by searching for its subject.
	// +optional
	UserSearch *LDAPUserSearch `json:"userSearch,omitempty"`
}

// LDAPUserSearch finds the one entry whose attribute equals the persona's
// subject under a base DN.
type LDAPUserSearch struct {
	// baseDN is where the search starts (the whole subtree is searched).
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	BaseDN string `json:"baseDN"`

	// attribute holds the subject, e.g. uid, cn or sAMAccountName.
	// +optional
	// +kubebuilder:default=uid
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9-]*$`
	Attribute string `json:"attribute,omitempty"`
}
