"""GreyWind (灰风): an LLM persona runtime for QQ group chats."""
