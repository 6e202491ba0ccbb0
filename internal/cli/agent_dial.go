package cli

import "github.com/agentproof/agentproof/client"

// The built-in agents reach the agent API over HTTP (package client): the heartbeat
// runner gives them the company's agent API URL and their run token.
func init() { dialAgentAPI = client.DialAgent }
