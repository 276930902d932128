"""OpenAI's APIs: chat completions (also any server that speaks them), the Responses API,
and Azure OpenAI deployments."""
