"""Google Gemini: through its OpenAI-compatible endpoint, and through its own API with the
`google-genai` SDK."""
