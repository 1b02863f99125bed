package forgetest

import "strings"

// corpusYAML is a REST source Corpus for the forge: the Gitea Corpus of
// docs/plant-where-content-lives.md, except that the repository is named
// by its captured value, so every operation depends on a capture.
const corpusYAML = `apiVersion: ragcanary.dev/v1alpha1
kind: Corpus
metadata:
  name: forge
spec:
  driver:
    type: REST
    timeout: 5s
    rest:
      url: BASE
      auth:
        type: Bearer
        scheme: token
        secretRef: {name: forge-admin, key: token}
      values:
        org: ragcanary
      operations:
        createDocument:
          - method: POST
            path: /orgs/{{.Values.org}}/repos
            body: '{"name": {{json .DocumentID}}, "private": true}'
            expect: [201]
            capture: {repo: /name}
          - method: POST
            path: /repos/{{.Values.org}}/{{.Captured.repo}}/issues
            body: '{"title": {{json .Title}}, "body": {{json .Body}}}'
            expect: [201]
            capture: {issue: /number}
        lookupDocument:
          - method: GET
            path: /repos/{{.Values.org}}/{{.DocumentID}}
            expect: [200]
            capture: {repo: /name}
          - method: GET
            path: /repos/{{.Values.org}}/{{.Captured.repo}}/issues
            query: {state: all, type: issues}
            expect: [200]
            capture: {issue: /0/number}
        updateContent:
          - method: PATCH
            path: /repos/{{.Values.org}}/{{.Captured.repo}}/issues/{{.Captured.issue}}
            body: '{"title": {{json .Title}}, "body": {{json .Body}}}'
            expect: [201]
        deleteDocument:
          - method: DELETE
            path: /repos/{{.Values.org}}/{{.Captured.repo}}
            expect: [204]
        grant:
          - method: PUT
            path: /repos/{{.Values.org}}/{{.Captured.repo}}/collaborators/{{.Principal}}
            body: '{"permission": "read"}'
            expect: [204]
        revoke:
          - method: DELETE
            path: /repos/{{.Values.org}}/{{.Captured.repo}}/collaborators/{{.Principal}}
            expect: [204]
        grantGroup:
          - method: GET
            path: /orgs/{{.Values.org}}/teams/search
            query: {q: '{{.Group}}'}
            expect: [200]
            capture: {team: /data/0/id}
          - method: PUT
            path: /teams/{{.Captured.team}}/repos/{{.Values.org}}/{{.Captured.repo}}
            expect: [204]
        revokeGroup:
          - method: GET
            path: /orgs/{{.Values.org}}/teams/search
            query: {q: '{{.Group}}'}
            expect: [200]
            capture: {team: /data/0/id}
          - method: DELETE
            path: /teams/{{.Captured.team}}/repos/{{.Values.org}}/{{.Captured.repo}}
            expect: [204]
        addToGroup:
          - method: GET
            path: /orgs/{{.Values.org}}/teams/search
            query: {q: '{{.Group}}'}
            expect: [200]
            capture: {team: /data/0/id}
          - method: PUT
            path: /teams/{{.Captured.team}}/members/{{.Subject}}
            expect: [204]
        removeFromGroup:
          - method: GET
            path: /orgs/{{.Values.org}}/teams/search
            query: {q: '{{.Group}}'}
            expect: [200]
            capture: {team: /data/0/id}
          - method: DELETE
            path: /teams/{{.Captured.team}}/members/{{.Subject}}
            expect: [204]
  surfaces:
    search:
      type: HTTP
      url: BASE/repos/issues/search
      method: GET
      query: {q: '{{.Query}}', limit: '{{.K}}', type: issues, state: all}
      credentialHeader: {name: Authorization, prefix: "token "}
      hits: ""
      id: /id
      text: /body
`

// CorpusYAML is a Corpus manifest declaring every operation of a REST
// source against the forge at baseURL.
func CorpusYAML(baseURL string) string { return strings.ReplaceAll(corpusYAML, "BASE", baseURL) }
