"""The fields of Gemini's request messages, for both APIs: the one table the strict mock's allowlists
derive from (`validate.unknown_fields` walks a body with it).

Each message maps a wire field (lowerCamelCase; proto JSON also takes the snake_case spelling) to a
spec: the message its value is (a list of them or one), `map:<Message>` for a map of them, `struct`
for free-form JSON (arguments, labels, JSON schemas: never walked), or "" for a scalar; a suffix
`@mldev` or `@vertex` marks a field only that API has. The table is what the installed google-genai
emits, derived from its types and from its request converters (`google/genai/models.py`
`_GenerateContentParameters_to_mldev` / `_to_vertex`, `_CountTokensParameters_to_vertex`), which map
snake_case to wire names and raise where one API lacks a field ("... is only supported in Gemini
Developer API mode"); tests/test_mock_sdk_fields.py re-derives it from the installed SDK and fails on
any difference, so a new SDK field cannot be refused only because this file is stale. Where the real
API refuses what the SDK emits, REAL_REFUSALS says so with the source; what the mock accepts beyond
the SDK is in EXTRAS with the source. A field in neither this table nor the SDK is refused.
"""

from functools import cache

STRUCT = "struct"
MAP = "map:"
APIS = ("mldev", "vertex")

MESSAGES: dict[str, dict[str, str]] = {
    "ApiAuth": {"apiKeyConfig": "ApiAuthApiKeyConfig@vertex"},
    "ApiAuthApiKeyConfig": {"apiKeySecretVersion": "@vertex", "apiKeyString": "@vertex"},
    "ApiKeyConfig": {
        "apiKeySecret": "@vertex", "apiKeyString": "@vertex", "httpElementLocation": "@vertex", "name": "@vertex"},
    "AudioMetadata": {"endOffset": "", "startOffset": ""},
    "AudioResponseFormat": {
        "bitRate": "@vertex", "delivery": "@vertex", "mimeType": "@vertex", "sampleRate": "@vertex"},
    "AudioTranscriptionConfig": {
        "adaptationPhrases": "", "customVocabulary": "", "diarization": "", "languageAuto": "LanguageAuto",
        "languageCodes": "", "languageHints": "LanguageHints", "mode": "", "sourceText": "", "wordTimestamp": ""},
    "AuthConfig": {
        "apiKey": "", "apiKeyConfig": "ApiKeyConfig@vertex", "authType": "@vertex",
        "googleServiceAccountConfig": "AuthConfigGoogleServiceAccountConfig@vertex",
        "httpBasicAuthConfig": "AuthConfigHttpBasicAuthConfig@vertex", "oauthConfig": "AuthConfigOauthConfig@vertex",
        "oidcConfig": "AuthConfigOidcConfig@vertex"},
    "AuthConfigGoogleServiceAccountConfig": {"serviceAccount": "@vertex"},
    "AuthConfigHttpBasicAuthConfig": {"credentialSecret": "@vertex"},
    "AuthConfigOauthConfig": {"accessToken": "@vertex", "serviceAccount": "@vertex"},
    "AuthConfigOidcConfig": {"idToken": "@vertex", "serviceAccount": "@vertex"},
    "Blob": {"data": "", "displayName": "", "mimeType": ""},
    "CodeExecutionResult": {"id": "", "outcome": "", "output": ""},
    "ComputerUse": {
        "disabledSafetyPolicies": "", "enablePromptInjectionDetection": "", "environment": "",
        "excludedPredefinedFunctions": ""},
    "Content": {"parts": "Part", "role": ""},
    "CountTokensRequest": {
        "contents": "Content", "generationConfig": "GenerationConfig@vertex", "systemInstruction": "Content@vertex",
        "tools": "Tool@vertex"},
    "DocumentMetadata": {"contentLayers": "", "endPage": "", "startPage": ""},
    "DynamicRetrievalConfig": {"dynamicThreshold": "", "mode": ""},
    "EnterpriseWebSearch": {"blockingConfidence": "@vertex", "excludeDomains": "@vertex"},
    "ExecutableCode": {"code": "", "id": "", "language": ""},
    "ExternalApi": {
        "apiAuth": "ApiAuth@vertex", "apiSpec": "@vertex", "authConfig": "AuthConfig@vertex",
        "elasticSearchParams": "ExternalApiElasticSearchParams@vertex", "endpoint": "@vertex",
        "simpleSearchParams": "ExternalApiSimpleSearchParams@vertex"},
    "ExternalApiElasticSearchParams": {"index": "@vertex", "numHits": "@vertex", "searchTemplate": "@vertex"},
    "ExternalApiSimpleSearchParams": {},
    "FileData": {"displayName": "", "fileUri": "", "mimeType": ""},
    "FileSearch": {"fileSearchStoreNames": "@mldev", "metadataFilter": "@mldev", "topK": "@mldev"},
    "FunctionCall": {
        "args": "struct", "id": "", "name": "", "partialArgs": "PartialArg@vertex", "willContinue": "@vertex"},
    "FunctionCallingConfig": {"allowedFunctionNames": "", "mode": "", "streamFunctionCallArguments": "@vertex"},
    "FunctionDeclaration": {
        "behavior": "", "description": "", "name": "", "parameters": "Schema", "parametersJsonSchema": "struct",
        "response": "Schema", "responseJsonSchema": "struct"},
    "FunctionResponse": {
        "id": "", "name": "", "parts": "FunctionResponsePart", "response": "struct", "scheduling": "",
        "willContinue": "@mldev"},
    "FunctionResponseBlob": {"data": "", "displayName": "", "mimeType": ""},
    "FunctionResponseFileData": {"displayName": "", "fileUri": "", "mimeType": ""},
    "FunctionResponsePart": {
        "audioMetadata": "AudioMetadata", "documentMetadata": "DocumentMetadata",
        "fileData": "FunctionResponseFileData", "inlineData": "FunctionResponseBlob", "mediaProcessing": "@mldev",
        "mediaResolution": "PartMediaResolution", "spreadsheetMetadata": "SpreadsheetMetadata",
        "videoMetadata": "VideoMetadata"},
    "GenerateContentRequest": {
        "cachedContent": "", "contents": "Content", "continuationToken": "", "generationConfig": "GenerationConfig",
        "labels": "struct", "modelArmorConfig": "ModelArmorConfig@vertex",
        "outputConfig": "GenerationOutputConfig@vertex", "safetySettings": "SafetySetting", "serviceTier": "",
        "store": "@mldev", "systemInstruction": "Content", "toolConfig": "ToolConfig", "tools": "Tool"},
    "GenerationConfig": {
        "audioTimestamp": "@vertex", "audioTranscriptionConfig": "AudioTranscriptionConfig", "candidateCount": "",
        "enableAffectiveDialog": "@vertex", "enableEnhancedCivicAnswers": "@mldev", "frequencyPenalty": "",
        "imageConfig": "ImageConfig", "logprobs": "", "maxOutputTokens": "", "mediaResolution": "",
        "modelConfig": "ModelSelectionConfig@vertex", "presencePenalty": "", "responseFormat": "ResponseFormat@vertex",
        "responseJsonSchema": "struct", "responseLogprobs": "", "responseMimeType": "", "responseModalities": "",
        "responseSchema": "Schema", "routingConfig": "GenerationConfigRoutingConfig@vertex", "seed": "",
        "speechConfig": "SpeechConfig", "stopSequences": "", "temperature": "", "thinkingConfig": "ThinkingConfig",
        "topK": "", "topP": "", "translationConfig": "TranslationConfig@vertex"},
    "GenerationConfigRoutingConfig": {
        "autoMode": "GenerationConfigRoutingConfigAutoRoutingMode@vertex",
        "manualMode": "GenerationConfigRoutingConfigManualRoutingMode@vertex"},
    "GenerationConfigRoutingConfigAutoRoutingMode": {"modelRoutingPreference": "@vertex"},
    "GenerationConfigRoutingConfigManualRoutingMode": {"modelName": "@vertex"},
    "GenerationOutputConfig": {"outputUriPrefix": "@vertex"},
    "GoogleMaps": {"authConfig": "AuthConfig", "enableWidget": "", "groundingTypes": "GoogleMapsGroundingTypes@vertex"},
    "GoogleMapsGroundingTypes": {"places": "GoogleMapsPlaces@vertex", "routing": "GoogleMapsRouting@vertex"},
    "GoogleMapsPlaces": {},
    "GoogleMapsRouting": {},
    "GoogleSearch": {
        "blockingConfidence": "@vertex", "excludeDomains": "@vertex", "searchTypes": "SearchTypes",
        "timeRangeFilter": "Interval"},
    "GoogleSearchRetrieval": {"dynamicRetrievalConfig": "DynamicRetrievalConfig"},
    "ImageConfig": {
        "aspectRatio": "", "imageOutputOptions": "ImageConfigImageOutputOptions@vertex", "imageSize": "",
        "personGeneration": "@vertex", "prominentPeople": "@vertex"},
    "ImageConfigImageOutputOptions": {"compressionQuality": "@vertex", "mimeType": "@vertex"},
    "ImageResponseFormat": {
        "aspectRatio": "@vertex", "delivery": "@vertex", "imageSize": "@vertex", "mimeType": "@vertex"},
    "ImageSearch": {},
    "Interval": {"endTime": "", "startTime": ""},
    "LanguageAuto": {},
    "LanguageHints": {"languageCodes": ""},
    "LatLng": {"latitude": "", "longitude": ""},
    "McpServer": {"name": "@mldev", "streamableHttpTransport": "StreamableHttpTransport@mldev"},
    "ModelArmorConfig": {"promptTemplateName": "@vertex", "responseTemplateName": "@vertex"},
    "ModelSelectionConfig": {"featureSelectionPreference": "@vertex"},
    "MultiSpeakerVoiceConfig": {"speakerVoiceConfigs": "SpeakerVoiceConfig"},
    "Part": {
        "audioMetadata": "AudioMetadata", "audioTranscription": "Transcription",
        "codeExecutionResult": "CodeExecutionResult", "documentMetadata": "DocumentMetadata",
        "executableCode": "ExecutableCode", "fileData": "FileData", "functionCall": "FunctionCall",
        "functionResponse": "FunctionResponse", "inlineData": "Blob", "mediaProcessing": "",
        "mediaResolution": "PartMediaResolution", "partMetadata": "struct@mldev", "speechMetadata": "SpeechMetadata",
        "spreadsheetMetadata": "SpreadsheetMetadata", "text": "", "thought": "", "thoughtSignature": "",
        "toolCall": "ToolCall@mldev", "toolResponse": "ToolResponse@mldev", "videoMetadata": "VideoMetadata"},
    "PartMediaResolution": {"level": "", "numTokens": ""},
    "PartialArg": {
        "boolValue": "@vertex", "jsonPath": "@vertex", "nullValue": "@vertex", "numberValue": "@vertex",
        "stringValue": "@vertex", "willContinue": "@vertex"},
    "PrebuiltVoiceConfig": {"voiceName": ""},
    "RagRetrievalConfig": {
        "filter": "RagRetrievalConfigFilter@vertex", "hybridSearch": "RagRetrievalConfigHybridSearch@vertex",
        "ranking": "RagRetrievalConfigRanking@vertex", "topK": "@vertex"},
    "RagRetrievalConfigFilter": {
        "metadataFilter": "@vertex", "vectorDistanceThreshold": "@vertex", "vectorSimilarityThreshold": "@vertex"},
    "RagRetrievalConfigHybridSearch": {"alpha": "@vertex"},
    "RagRetrievalConfigRanking": {
        "llmRanker": "RagRetrievalConfigRankingLlmRanker@vertex",
        "rankService": "RagRetrievalConfigRankingRankService@vertex"},
    "RagRetrievalConfigRankingLlmRanker": {"modelName": "@vertex"},
    "RagRetrievalConfigRankingRankService": {"modelName": "@vertex"},
    "ReplicatedVoiceConfig": {
        "consentAudio": "@mldev", "mimeType": "", "voiceConsentSignature": "VoiceConsentSignature@mldev",
        "voiceSampleAudio": ""},
    "ResponseFormat": {
        "audio": "AudioResponseFormat@vertex", "image": "ImageResponseFormat@vertex",
        "text": "TextResponseFormat@vertex", "video": "VideoResponseFormat@vertex"},
    "Retrieval": {
        "disableAttribution": "@vertex", "externalApi": "ExternalApi@vertex", "vertexAiSearch": "VertexAISearch@vertex",
        "vertexRagStore": "VertexRagStore@vertex"},
    "RetrievalConfig": {"languageCode": "", "latLng": "LatLng"},
    "SafetySetting": {"category": "", "method": "@vertex", "threshold": ""},
    "Schema": {
        "additionalProperties": "struct", "anyOf": "Schema", "default": "struct", "defs": "map:Schema",
        "description": "", "enum": "", "example": "struct", "format": "", "items": "Schema", "maxItems": "",
        "maxLength": "", "maxProperties": "", "maximum": "", "minItems": "", "minLength": "", "minProperties": "",
        "minimum": "", "nullable": "", "pattern": "", "properties": "map:Schema", "propertyOrdering": "", "ref": "",
        "required": "", "title": "", "type": ""},
    "SearchTypes": {"imageSearch": "ImageSearch", "webSearch": "WebSearch"},
    "SpeakerVoiceConfig": {"speaker": "", "voiceConfig": "VoiceConfig"},
    "SpeechConfig": {
        "languageCode": "", "multiSpeakerVoiceConfig": "MultiSpeakerVoiceConfig", "voiceConfig": "VoiceConfig"},
    "SpeechMetadata": {"speaker": "", "style": ""},
    "SpreadsheetMetadata": {"contentLayers": "", "sheetIndex": "", "visibleCells": ""},
    "StreamableHttpTransport": {
        "headers": "struct@mldev", "sseReadTimeout": "@mldev", "terminateOnClose": "@mldev", "timeout": "@mldev",
        "url": "@mldev"},
    "TextResponseFormat": {"jsonSchema": "struct@vertex", "mimeType": "@vertex"},
    "ThinkingConfig": {"includeThoughts": "", "thinkingBudget": "", "thinkingLevel": ""},
    "Tool": {
        "codeExecution": "ToolCodeExecution", "computerUse": "ComputerUse",
        "enterpriseWebSearch": "EnterpriseWebSearch@vertex", "exaAiSearch": "ToolExaAiSearch@vertex",
        "fileSearch": "FileSearch@mldev", "functionDeclarations": "FunctionDeclaration", "googleMaps": "GoogleMaps",
        "googleSearch": "GoogleSearch", "googleSearchRetrieval": "GoogleSearchRetrieval",
        "mcpServers": "McpServer@mldev", "parallelAiSearch": "ToolParallelAiSearch@vertex",
        "retrieval": "Retrieval@vertex", "urlContext": "UrlContext"},
    "ToolCall": {"args": "struct@mldev", "id": "@mldev", "toolType": "@mldev"},
    "ToolCodeExecution": {},
    "ToolConfig": {
        "functionCallingConfig": "FunctionCallingConfig", "includeServerSideToolInvocations": "@mldev",
        "retrievalConfig": "RetrievalConfig"},
    "ToolExaAiSearch": {"apiKey": "@vertex", "customConfigs": "struct@vertex"},
    "ToolParallelAiSearch": {
        "apiKey": "@vertex", "customConfigs": "struct@vertex", "enableDataRetention": "@vertex",
        "enableZeroDataRetention": "@vertex"},
    "ToolResponse": {"id": "@mldev", "response": "struct@mldev", "toolType": "@mldev"},
    "Transcription": {
        "endOffset": "", "finished": "", "languageCode": "", "speakerLabel": "", "startOffset": "", "text": "",
        "words": "WordInfo"},
    "TranslationConfig": {"echoTargetLanguage": "@vertex", "targetLanguageCode": "@vertex"},
    "UrlContext": {},
    "VertexAISearch": {
        "dataStoreSpecs": "VertexAISearchDataStoreSpec@vertex", "datastore": "@vertex", "engine": "@vertex",
        "filter": "@vertex", "maxResults": "@vertex"},
    "VertexAISearchDataStoreSpec": {"dataStore": "@vertex", "filter": "@vertex"},
    "VertexRagStore": {
        "ragCorpora": "@vertex", "ragResources": "VertexRagStoreRagResource@vertex",
        "ragRetrievalConfig": "RagRetrievalConfig@vertex", "similarityTopK": "@vertex", "storeContext": "@vertex",
        "vectorDistanceThreshold": "@vertex"},
    "VertexRagStoreRagResource": {"ragCorpus": "@vertex", "ragFileIds": "@vertex"},
    "VideoMetadata": {"contentLayers": "", "endOffset": "", "fps": "", "startOffset": ""},
    "VideoResponseFormat": {
        "aspectRatio": "@vertex", "delivery": "@vertex", "duration": "@vertex", "gcsUri": "@vertex",
        "resolution": "@vertex"},
    "VoiceConfig": {
        "prebuiltVoiceConfig": "PrebuiltVoiceConfig", "replicatedVoiceConfig": "ReplicatedVoiceConfig", "voice": ""},
    "VoiceConsentSignature": {"signature": "@mldev"},
    "WebSearch": {},
    "WordInfo": {"endOffset": "", "startOffset": "", "word": ""},
}

# SDK-emitted fields the real API refuses on one API, with the source. The SDK itself refuses
# additionalProperties for the Developer API in response schemas (google/genai/_transformers.py
# `_raise_for_unsupported_mldev_properties`), but passes it through in function declarations, where
# the Developer API answers `Unknown name "additional_properties" at 'tools[0].function_declarations[0]
# .parameters': Cannot find field.` — the SDK's own request, google/adk-python #2734 (also Laisky/one-api
# #60, zed-industries/zed #43231; tests/test_mock_strict.py pins the text). Vertex's Schema has it.
REAL_REFUSALS: dict[tuple[str, str], str] = {
    ("Schema", "additionalProperties"): "mldev",
}

# Fields the mock accepts that the installed SDK does not emit, with the source. countTokens on the
# Developer API takes a whole GenerateContentRequest (ai.google.dev/api/tokens#method:-models.counttokens;
# the proxy's own countTokens sends it; the mock validates it as a request of its own).
EXTRAS: dict[tuple[str, str], str] = {
    ("CountTokensRequest", "generateContentRequest"): "struct@mldev",
    # The SDK calls it Vertex-only and raises on the Developer API; the proxy's opt-in
    # `--stream-arguments` sends it there too, and the suite's partialArgs tests run on that path.
    # Our own guess, not a recording: the Developer API's own answer to it is not verified.
    ("FunctionCallingConfig", "streamFunctionCallArguments"): "",
}


def _parse(spec: str) -> tuple[str, frozenset[str]]:
    kind, _, api = spec.partition("@")
    return kind, frozenset({api} if api else APIS)


@cache
def fields(message: str, api: str) -> dict[str, str]:
    """{wire field: child kind} of `message` on `api` ("mldev" or "vertex")."""
    specs = {**MESSAGES[message], **{f: s for (m, f), s in EXTRAS.items() if m == message}}
    out = {}
    for name, spec in specs.items():
        kind, apis = _parse(spec)
        if api in apis and REAL_REFUSALS.get((message, name)) != api:
            out[name] = kind
    return out
