"""The live cluster: read NodeLists (file or API server), audit them against a plan, draft intents from them."""
