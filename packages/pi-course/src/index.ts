/**
 * @pi/course: the public surface, listed explicitly. Chapters add to it in order.
 */

// Chapter 02: the event stream
export { EventStream } from "./event-stream.js";
// #region ch03

// Chapter 03: canonical messages
export { AssistantMessageEventStream } from "./event-stream.js";
export {
  EMPTY_USAGE,
  assistantMessage,
  textOf,
  toolResultMessage,
  userMessage,
} from "./messages.js";
export type { AssistantMessageOverrides, TextInput, ToolResultInput } from "./messages.js";
export type {
  AgentContext,
  AgentMessage,
  AssistantContent,
  AssistantMessage,
  Context,
  CustomAgentMessages,
  Message,
  ModelEvent,
  StopReason,
  TextContent,
  ToolCall,
  ToolDefinition,
  ToolResultMessage,
  Usage,
  UserContent,
  UserMessage,
} from "./types.js";
export type {
  Model,
  StreamOptions,
} from "./model.js";
// #endregion
// #region ch04

// Chapter 04: the scripted model
export { ScriptedModel } from "./models/scripted-model.js";
export type {
  ScriptedFailure,
  ScriptedModelOptions,
  ScriptedResponder,
  ScriptedTurn,
} from "./models/scripted-model.js";
// #endregion
// #region ch05

// Chapter 05: the OpenAI-compatible provider
export { PiCourseError, errorText } from "./base/errors.js";
export type { ImageContent, ThinkingContent } from "./types.js";
export { checkImage } from "./models/http/image-content.js";
export type { InputKind, InputOptions } from "./models/http/image-content.js";
export { SseDecoder, readSse, readSseBatches } from "./models/http/sse.js";
export type { SseEvent } from "./models/http/sse.js";
export { PartialJsonParser, parseToolArguments } from "./models/http/partial-json.js";
export type { ParsedToolArguments } from "./models/http/partial-json.js";
export {
  toChatCompletionsRequest,
  toWireMessages,
  toWireTools,
} from "./models/openai/openai-wire.js";
export type {
  ChatCompletionChunk,
  ChatCompletionsRequest,
  WireMessage,
  WireRequestOptions,
  WireImagePart,
  WireTextPart,
  WireTool,
  WireToolCall,
  WireToolCallDelta,
  WireUsage,
  WireUserPart,
} from "./models/openai/openai-wire.js";
export { ProviderTurn } from "./models/http/provider-turn.js";
export type { TurnMeta } from "./models/http/provider-turn.js";
export { ProviderModel } from "./models/http/provider-model.js";
export type { FrameOutcome, ProviderIdentity } from "./models/http/provider-model.js";
export { failedMessage } from "./models/http/request-failure.js";
export {
  ChatCompletionsTurn,
  NO_USAGE_DIAGNOSTIC,
  REFUSAL_DIAGNOSTIC,
} from "./models/openai/openai-inbound.js";
export { applyRequestOptions } from "./models/openai/openai-options.js";
export type { ChatRequestOptions, ToolChoice } from "./models/openai/openai-options.js";
export { createOpenAICompatibleModel } from "./models/openai/openai-compatible.js";
export type { OpenAICompatibleOptions } from "./models/openai/openai-compatible.js";
export type { ErrorDetails, ErrorKind } from "./types.js";
export { DEFAULT_TRANSPORT, openEventStream } from "./models/http/http-transport.js";
export type { OpenStream, StreamingRequest, TransportOptions } from "./models/http/http-transport.js";
export { DEFAULT_LIMITS } from "./models/http/response-limits.js";
export type { ResponseLimits } from "./models/http/response-limits.js";
export {
  ANTHROPIC_VERSION,
  safeToolId,
  toAnthropicMessages,
  toAnthropicRequest,
  toAnthropicTools,
} from "./models/anthropic/anthropic-wire.js";
export type {
  AnthropicAssistantBlock,
  AnthropicImageBlock,
  AnthropicRequest,
  AnthropicRequestOptions,
  AnthropicStreamEvent,
  AnthropicTextBlock,
  AnthropicToolResultBlock,
  AnthropicUserBlock,
  AnthropicWireMessage,
  AnthropicWireTool,
  AnthropicWireUsage,
} from "./models/anthropic/anthropic-wire.js";
export { AnthropicTurn, describeAnthropicError } from "./models/anthropic/anthropic-inbound.js";
export { createAnthropicModel } from "./models/anthropic/anthropic.js";
export type { AnthropicOptions } from "./models/anthropic/anthropic.js";
// #endregion
// #region ch06

// Chapter 06: tools
export {
  ToolArgumentsError,
  defineTool,
  prepareToolArguments,
  toToolDefinition,
  validateToolArguments,
} from "./agent/tools.js";
export type { ToolArgumentIssue, ToolSpec } from "./agent/tools.js";
export type {
  AgentTool,
  AgentToolResult,
  AgentToolUpdateCallback,
  ToolExecutionMode,
} from "./types.js";
// #endregion
// #region ch07

// Chapter 07: the agent loop
export {
  DEFAULT_MAX_TURNS,
  agentLoop,
  agentLoopContinue,
  defaultConvertToLlm,
  runAgentLoop,
  runAgentLoopContinue,
} from "./agent/agent-loop.js";
export type { AgentEventSink } from "./agent/tool-execution.js";
export type {
  AfterToolCallContext,
  AfterToolCallResult,
  AgentEvent,
  AgentEventStream,
  AgentLoopConfig,
  BeforeToolCallContext,
  BeforeToolCallResult,
} from "./agent/types.js";
// #endregion
// #region ch08

// Chapter 08: coding tools over one workspace
export {
  PathLocks,
  Workspace,
  WorkspaceEscapeError,
  applyEdits,
  commandEnvironment,
  createBashTool,
  createCodingTools,
  createEditTool,
  createLsTool,
  createReadTool,
  createWriteTool,
  formatReadOutput,
  runCommand,
  writeFileAtomic,
} from "./coding-tools/index.js";
export type {
  AppliedEdit,
  AtomicWriteOptions,
  BashDetails,
  BashToolOptions,
  CodingToolsOptions,
  CommandResult,
  EditDetails,
  FormatReadOptions,
  HeldFolder,
  ListEntry,
  LsDetails,
  ReadDetails,
  ReadWindow,
  ResolvedPath,
  RunCommandOptions,
  TextEdit,
  WorkspaceOptions,
  WriteDetails,
} from "./coding-tools/index.js";
// #endregion
// #region ch09

// Chapter 09: the stateful agent
export { Agent } from "./agent/agent.js";
export { AgentListenerError } from "./agent/agent-run.js";
export type { ListenerFailure } from "./agent/agent-run.js";
export { MessageQueue } from "./agent/agent-queue.js";
export { reduceAgentEvent } from "./agent/agent-state.js";
export type { AgentDraft } from "./agent/agent-state.js";
export type {
  AgentInitialState,
  AgentListener,
  AgentOptions,
  AgentState,
  QueueMode,
} from "./agent/types.js";
// #endregion
// #region ch10

// Chapter 10: the session tree on disk
export { SessionFile, messagesOf } from "./session/session.js";
export type { SessionEntryInput, SessionFileOptions, SessionHeaderInput } from "./session/session.js";
export { MAX_NESTING, SESSION_FORMAT_VERSION, SessionFileError } from "./session/session-entry.js";
export { SessionLockedError, lockPathOf } from "./session/session-lock.js";
export type { LockOwner } from "./session/session-lock.js";
export { readSessionFile } from "./session/session-reader.js";
export type { SessionContents, SessionRecovery, TornLine } from "./session/session-reader.js";
export type {
  LabelEntry,
  MessageEntry,
  SessionEntry,
  SessionEntryBase,
  SessionHeader,
  SessionTornMark,
} from "./session/types.js";
// #endregion
// #region ch11

// Chapter 11: the context budget
export { groupInteractions, openSpans } from "./session/interactions.js";
export type { Interaction } from "./session/interactions.js";
export {
  CHARS_PER_TOKEN,
  IMAGE_TOKENS,
  charsOf,
  countTokens,
  estimateTokens,
  hasTrustedUsage,
} from "./session/token-estimate.js";
export type { TokenCounts, TokenEstimateInput, TokenEstimator } from "./session/token-estimate.js";
export { projectContext, projectMessages, summaryMessage, transcriptOf } from "./session/context.js";
export type { ContextOverflow, ContextProjection, ProjectionOptions, Transcript } from "./session/context.js";
export { answerInterruptedCalls, interruptedText } from "./session/interrupted.js";
export type { InterruptedCalls } from "./session/interrupted.js";
export { compact, findCut, summarizeWithModel } from "./session/compaction.js";
export type {
  CompactOptions,
  CompactableSession,
  CompactionDraft,
  CompactionFailure,
  CompactionResult,
  Summarizer,
  SummaryInput,
} from "./session/compaction.js";
export {
  MAX_RESULT_CHARS,
  filesTouched,
  formatFilesSection,
  serializeConversation,
  summaryRequest,
} from "./session/summary-prompt.js";
export type { CompactionEntry } from "./session/types.js";
export { DEFAULT_COMPACT_AT, SessionWriteError } from "./agent/agent-session.js";
export type {
  AgentCompactionReport,
  AgentContextBudget,
  AgentSessionEntryInput,
  AgentSessionStore,
} from "./agent/types.js";
// #endregion
// #region ch12

// Chapter 12: the project around the agent
export type { ResourceLocations, ResourceScope, ResourceWarning } from "./resources/types.js";
export { foldersFromRoot, foldersToProjectRoot, gitRoot, projectRoot } from "./resources/folders.js";
export { parseFrontmatter } from "./resources/frontmatter.js";
export type { Frontmatter } from "./resources/frontmatter.js";
export {
  CONTEXT_FILE_MAX_BYTES,
  CONTEXT_FILE_NAMES,
  contextFilesSection,
  findContextFiles,
  linksOutside,
  truncationNote,
} from "./resources/context-files.js";
export type { ContextFile, ContextFileOptions } from "./resources/context-files.js";
export {
  SKILL_COMPATIBILITY_MAX,
  SKILL_DESCRIPTION_MAX,
  SKILL_NAME_MAX,
  discoverSkills,
  readSkill,
  readSkillBody,
  skillInvocation,
  skillNameProblem,
  skillRoots,
  skillsSection,
} from "./resources/skills.js";
export type { Skill, SkillRoot } from "./resources/skills.js";
export { SKILL_FILE_MAX_BYTES, SkillLibrary, createSkillTool } from "./resources/skill-tool.js";
export type { SkillToolDetails } from "./resources/skill-tool.js";
export {
  TEMPLATE_NAME,
  expandTemplate,
  loadPromptTemplates,
  parseSlashCommand,
  splitArguments,
  templateFolders,
} from "./resources/prompt-templates.js";
export type { PromptTemplate } from "./resources/prompt-templates.js";
export { DEFAULT_HOOK_TIMEOUT_MS } from "./resources/extension-api.js";
export type {
  ExtensionAPI,
  ExtensionAfterHook,
  ExtensionAfterResult,
  ExtensionBeforeHook,
  ExtensionBeforeResult,
  ExtensionCommand,
  ExtensionCommandContext,
  ExtensionFactory,
  ExtensionFlag,
  ExtensionToolCall,
  HookOptions,
} from "./resources/extension-api.js";
export { ExtensionFlags } from "./resources/extension-flags.js";
export type { RegisteredFlag } from "./resources/extension-flags.js";
export { EXTENSION_EXTENSIONS, ExtensionHost, extensionFiles } from "./resources/extension-host.js";
export type { ExtensionHostOptions, LoadedExtension } from "./resources/extension-host.js";
export {
  TRUST_FILE,
  TrustStore,
  TrustStoreError,
  canonicalFolder,
  decideTrust,
  isTrusted,
} from "./resources/trust.js";
export type { DecideTrustOptions, TrustDecision, TrustOutcome, TrustSource } from "./resources/trust.js";
export {
  composeSystemPrompt,
  findProjectResources,
  loadResources,
  projectExtensionFolder,
  resourceTools,
} from "./resources/resources.js";
export type { LoadResourcesOptions, Resources } from "./resources/resources.js";
// #endregion
// #region ch13

// Chapter 13: the CLI's transcript, for programs that show what their agent does
export { transcriptPrinter } from "./cli/transcript.js";
export type { TranscriptOptions } from "./cli/transcript.js";
// The session's tree as drawn by /tree and the session page, and the page itself.
export { buildSessionTree, findNode } from "./session-page/tree.js";
export type { SessionTree, ShownEntry, TreeNode } from "./session-page/tree.js";
export { renderSessionPage, sessionPage, totalsOf } from "./session-page/page.js";
export type { SessionPageInput, SessionPageOptions, SessionTotals } from "./session-page/page.js";
export { escapeHtml } from "./session-page/escape.js";
// #endregion
// #region ch14
// Chapter 14: the eval harness (the `pi-course eval` command is in cli/eval-command.ts)
export {
  CaseFormatError,
  DEFAULT_CASE_SETTINGS,
  loadCase,
  loadSuite,
  parseCaseSettings,
} from "./eval/case-format.js";
export type { CaseSettings, EvalCase } from "./eval/case-format.js";
export { createCaseModel, loadCaseScript, parseCaseScript } from "./eval/case-script.js";
export type { CaseScript, ScriptTurn } from "./eval/case-script.js";
export { checkSessionReplay, checkToolPairing, diffSnapshots, snapshotFolders } from "./eval/protocol.js";
export type { FolderSnapshot, PathState } from "./eval/protocol.js";
export { MAX_CHECK_OUTPUT, runCheck } from "./eval/run-check.js";
export type { CheckOutcome } from "./eval/run-check.js";
export { classifyRun, runCase } from "./eval/run-case.js";
export type { RunCaseOptions, RunFacts, Wire, WiredAgent, WireSetup } from "./eval/run-case.js";
export type { RunPhase, RunRecord, RunStatus } from "./eval/run-record.js";
export { runPool } from "./eval/run-pool.js";
export { buildSuiteReport, formatSummary, suiteExitCode } from "./eval/suite-report.js";
export type { CaseReport, SuiteMeta, SuiteReport } from "./eval/suite-report.js";
export { readTranscripts, renderHtmlReport, runKey } from "./eval/html-report.js";
// the CLI's way to run one case (its runtime, the case's script offline), for harnesses elsewhere
export { caseModel, runtimeWire } from "./cli/eval-wiring.js";
export type { EvalServer } from "./cli/eval-wiring.js";
// #endregion
// #region ch15
// Chapter 15: tool exposure (declared vs callable) and the tool_search tool.
export type { ToolExposure } from "./types.js";
export { declaredToolNames, exposureOf, exposureRefusal } from "./agent/tool-exposure.js";
export type { CallOrigin } from "./agent/tool-exposure.js";
export { DeclaredWindow, MAX_DECLARED_DEFERRED } from "./agent/declared-window.js";
export { rankTools, tokenize, toolWords } from "./tool-search/bm25.js";
export type { ToolMatch } from "./tool-search/bm25.js";
export {
  TOOL_SEARCH_MAX_RESULTS,
  TOOL_SEARCH_MIN_SHARE,
  createToolSearchTool,
  relevantMatches,
} from "./tool-search/tool-search.js";
export type { ToolSearchDetails, ToolSearchOptions } from "./tool-search/tool-search.js";
// #endregion
// #region ch16
// Chapter 16: codemode: a script that calls tools, in a QuickJS sandbox in a worker thread.
export type { ToolExecutionContext } from "./types.js";
export { CodeSandbox, DEFAULT_SANDBOX_LIMITS, MAX_STACK_BYTES, STOP_GRACE_MS } from "./codemode/sandbox.js";
export type {
  NestedCallAnswer,
  NestedCallRecord,
  SandboxLimits,
  ScriptErrorKind,
  ScriptOutcome,
  ScriptRequest,
} from "./codemode/sandbox.js";
export { DECLARATIONS_TOKEN_BUDGET, toTypeScript, toolDeclarations } from "./codemode/declarations.js";
export { CODE_TOOL_NAME, createCodeTool, reportOutcome, sharedSandbox } from "./codemode/code-tool.js";
export type { CodeToolOptions } from "./codemode/code-tool.js";
// #endregion
// #region ch17
// Chapter 17: an MCP client (JSON-RPC over stdio or Streamable HTTP), MCP tools as agent tools,
// and the mcpServers configuration.
export { ErrorCode, McpError, isNotification, isRequest, readMessage } from "./mcp/json-rpc.js";
export type {
  JsonRpcErrorObject,
  JsonRpcId,
  JsonRpcMessage,
  JsonRpcNotification,
  JsonRpcRequest,
  JsonRpcResponse,
} from "./mcp/json-rpc.js";
export { DEFAULT_MAX_LINE_BYTES, LineDecoder, LineTooLongError } from "./mcp/line-decoder.js";
export type { McpTransport, TransportHandlers } from "./mcp/transport.js";
export { DEFAULT_REQUEST_TIMEOUT_MS, JsonRpcConnection } from "./mcp/connection.js";
export type { Progress, RequestHandler, RequestOptions } from "./mcp/connection.js";
export { INHERITED_ENV, StdioTransport } from "./mcp/stdio-transport.js";
export type { StdioServerParameters } from "./mcp/stdio-transport.js";
export { HttpTransport } from "./mcp/streamable-http.js";
export type { HttpServerParameters } from "./mcp/streamable-http.js";
export {
  LATEST_PROTOCOL_VERSION,
  McpClient,
  SUPPORTED_PROTOCOL_VERSIONS,
  withElicitationDefaults,
} from "./mcp/client.js";
export type { McpCallResult, McpClientOptions, McpContent, McpRoot, McpServerInfo, McpToolInfo } from "./mcp/client.js";
export { MAX_FORM_FIELDS, elicitationForm, fieldHint, readFieldAnswer, shown } from "./mcp/elicitation-form.js";
export type { ElicitationForm, FieldAnswer, FormField, FormFieldKind, FormOption } from "./mcp/elicitation-form.js";
export { MAX_TOOL_NAME, mapCallResult, mcpAgentTools, mcpToolName } from "./mcp/mcp-tools.js";
export type { McpToolDetails } from "./mcp/mcp-tools.js";
export { McpConfigError, expandVariables, loadMcpConfig, parseMcpConfig } from "./mcp/config.js";
export type { McpConfigSources, McpServerConfig } from "./mcp/config.js";
export { DEFAULT_MCP_STARTUP_TIMEOUT_MS, McpServers } from "./mcp/servers.js";
export type { McpServerEntry, McpServerState, McpServersOptions } from "./mcp/servers.js";
// Authorization of remote MCP servers (OAuth 2.1 as the 2025-11-25 specification profiles it).
export { McpAuthError } from "./mcp/auth/auth-error.js";
export type { McpAuthFailure } from "./mcp/auth/auth-error.js";
export type { HttpAuth } from "./mcp/auth/http-auth.js";
export {
  AUTH_REQUEST_TIMEOUT_MS,
  DEFAULT_LOGIN_TIMEOUT_MS,
  ID_JAG_TOKEN_TYPE,
  ID_TOKEN_TYPE,
  McpOAuth,
  REFRESH_MARGIN_MS,
} from "./mcp/auth/oauth.js";
export type { IdentityProviderSettings, LoginOptions, LoginResult, McpOAuthOptions } from "./mcp/auth/oauth.js";
export { McpTokenStore, MemoryTokenStore } from "./mcp/auth/token-store.js";
export type { StoredAuthorization, TokenStore } from "./mcp/auth/token-store.js";
export type { ClientAuthMethod, ClientSettings, KeptClient, OAuthClient } from "./mcp/auth/client-identity.js";
export type { PrivateKeyJwtSettings } from "./mcp/auth/client-assertion.js";
export { AUTH_MAX_RESPONSE_BYTES } from "./mcp/auth/auth-fetch.js";
export { isLoopbackUrl, isSecureUrl, OutboundError, outboundFetch } from "./models/http/outbound.js";
export type { OutboundPolicy, OutboundRefusal } from "./models/http/outbound.js";
export { oauthForServer } from "./mcp/auth/server-auth.js";
export type { SharedOAuthOptions } from "./mcp/auth/server-auth.js";
export type { McpOAuthSettings } from "./mcp/auth/oauth-settings.js";
// #endregion
// #region ch18
// Chapter 18: models as users choose them: the catalogue, thinking levels, cost, virtual models.
export { THINKING_LEVELS } from "./model.js";
export type { ThinkingLevel } from "./model.js";
export type { Cost } from "./types.js";
export type { ModelChangeEntry, ModelRouteEntry } from "./session/types.js";
export { withThinkingLevel } from "./models/openai/openai-thinking.js";
export { ANTHROPIC_THINKING_BUDGETS, withAnthropicThinking } from "./models/anthropic/anthropic-thinking.js";
export { BUILTIN_MODELS } from "./model-choice/catalogue-data.js";
export { DEFAULT_MODEL_INFO, ModelCatalogue } from "./model-choice/catalogue.js";
export type { CatalogueEntry, ModelApi, ModelInfo, ModelInput, ModelPrices } from "./model-choice/types.js";
export { ModelsFileError, loadModelsFile, loadModelsFileSync, parseModelsFile } from "./model-choice/models-file.js";
/** Where each provider of the catalogue is reached (endpoint, wire, key variable); `ModelCatalogue.endpoint(id)` gives a model's. */
export { BUILTIN_PROVIDERS } from "./model-choice/providers.js";
export type { ModelEndpoint, ProviderEndpoint } from "./model-choice/providers.js";
export type { ModelsFile } from "./model-choice/models-file.js";
export { conversationCost, costOf, formatConversationCost, formatDollars } from "./model-choice/cost.js";
export type { ConversationCost } from "./model-choice/cost.js";
export { atThinkingLevel, catalogued, relay, thinkingIgnored } from "./model-choice/catalogued-model.js";
export { createFallbackModel, createVirtualModel } from "./model-choice/virtual-model.js";
export type { RouteReport, VirtualModelOptions } from "./model-choice/virtual-model.js";
// #endregion
// #region ch19
// Chapter 19: durable runs. Commit first, then visible: a tool call's intent before its effect,
// its outcome right after, the streamed answer before it is shown; recovery after a crash.
export type { ToolIntentEntry, ToolOutcomeEntry } from "./session/types.js";
export { fileStreamJournal, streamPathOf } from "./durable/store.js";
export type { DurableStore, StreamJournal, StreamedTurn } from "./durable/store.js";
export { RunJournal } from "./durable/journal.js";
export type { RunJournalOptions } from "./durable/journal.js";
export {
  CUT_ANSWER,
  applyRecovery,
  mayNeedRecovery,
  notRunText,
  planRecovery,
  resumeRun,
  uncertainText,
} from "./durable/recovery.js";
export type {
  ApplyRecoveryOptions,
  PlannedCall,
  RecoveryAction,
  RecoveryPlan,
  RecoveryReport,
  ResumeRunOptions,
} from "./durable/recovery.js";
export { underToolHooks } from "./durable/recovery-hooks.js";
export type { RecoveryHooks } from "./durable/recovery-hooks.js";
// #endregion
