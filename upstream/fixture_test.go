package upstream_test

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type sdkTool = sdk.Tool

func freshHandler(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "fresh"}}}, nil
}
