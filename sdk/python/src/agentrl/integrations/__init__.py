"""Integrations that turn the traces agent frameworks already emit into agentrl trajectories.

- `agentrl.integrations.openai_agents.AgentrlTracingProcessor`: the OpenAI Agents SDK
  (`pip install 'agentrl-sdk[agents]'`).
- `agentrl.integrations.langchain.AgentrlCallbackHandler`: LangChain and LangGraph
  (`pip install 'agentrl-sdk[langchain]'`).

Each is imported from its own module, which needs its framework; this package imports none.
"""
